"""Derivative formulas: parsed with Python's ast and checked at generation time.

A formula is a Python expression over:
  - the op's argument names (`self`, `other`, `alpha`, `dim0`, ...);
  - `grad` (one return) or `grads[i]` (several), and `result` (one return) or
    `result0`, `result1`, ... (several);
  - attribute and method calls on those (`grad.transpose(dim0, dim1)`,
    `self.sizes()`, `src.dtype`);
  - numeric literals, True/False/None, arithmetic and comparison operators;
  - calls of ops in ops.yaml and of the HELPERS below.
Anything else stops the build naming the op, the input and the reason.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from model import Op, OpgenError

# The one list of names a formula may use besides ops and arguments.
HELPERS = {
    # Tensor metadata, read as Tensor's accessors (TensorBase's, eager/core/TensorBase.h).
    "sizes": "Tensor::sizes()",
    "strides": "Tensor::strides()",
    "dtype": "Tensor::dtype()",
    "device": "Tensor::device()",
    "dim": "Tensor::dim()",
    "numel": "Tensor::numel()",
    "storage_offset": "Tensor::storage_offset()",
    # Defined by the autograd issue (not ops yet; the autograd codegen supplies them).
    "maybe_multiply": "autograd issue: grad * alpha, skipped when alpha is 1",
    "zeros_like": "autograd issue: zeros of the same shape, dtype and device",
    "tanh_grad": "tanh's gradient: the tanh_backward op for real results, grad * conj(1 - y^2) for complex ones",
    "sigmoid_grad": "sigmoid's gradient: the sigmoid_backward op for real results, grad * conj(y(1 - y)) for complex",
    "silu_grad": "silu's gradient: the silu_backward op for real inputs, grad * conj(s(1 + z(1 - s))) for complex",
    "fft_c2c_backward": "_fft_c2c's gradient: the transform in the other direction, same normalization",
    "fft_r2c_backward": "_fft_r2c's gradient: zero-padded to the input length, inverse c2c, real part",
    "fft_c2r_backward": "_fft_c2r's gradient: onesided r2c with the mirrored entries doubled",
    "sgn_backward": "sgn's gradient: zero for real inputs, the unit-circle projection over |z| for complex ones",
    "conj_if_complex": "the complex conjugate of a complex tensor, a real tensor itself (Note [Complex dtypes])",
    "sum_to": "autograd issue: sums a broadcast gradient back to an input's sizes",
    "to": "autograd issue: converts to a dtype",
    "reshape": "autograd issue: view when possible, else a copy",
    "mm_mat2_backward": "mm's gradient for mat2, laid out as mat2 was (a transposed weight gets a gradient whose "
                        "transpose is contiguous): Note [mm's mat2 gradient keeps mat2's layout]",
    # softmax's and log_softmax's backward ops differentiated (double backward); nn.yaml
    "softmax_double_backward": "d _softmax_backward_data / d output: g*(go - sum(go*o)) - go*sum(g*o) along dim",
    "log_softmax_double_backward_grad_output": "d _log_softmax_backward_data / d grad_output: g - sum(g*exp(o))",
    "log_softmax_double_backward_output": "d _log_softmax_backward_data / d output: -g*exp(o)*sum(go) along dim",
    # Shape ops' backwards (issue "TensorIterator and the CPU kernels", shape ops); autograd issue.
    "as_strided_backward": "as_strided_backward(grad, input sizes, strides, storage offset, size, stride, "
                           "storage_offset): grad scattered through a storage-shaped buffer",
    "select_backward": "autograd issue: zeros of input_sizes with grad written at index along dim",
    "slice_backward": "autograd issue: zeros of input_sizes with grad written into the slice",
    "permute_backwards": "autograd issue: grad permuted by the inverse of dims",
    "split_backward": "autograd issue: cat of grads (undefined ones as zeros) along dim",
    "split_with_sizes_backward": "autograd issue: cat of grads (undefined ones as zeros) along dim",
    "unbind_backward": "autograd issue: stack of grads (undefined ones as zeros) along dim",
    "diagonal_backward": "autograd issue: zeros of input_sizes with grad written into the diagonal",
    "repeat_backward": "autograd issue: grad summed over the repeated blocks back to input_sizes",
    "repeat_interleave_backward": "autograd issue: grad summed over each element's repeats along dim",
    "cat_tensors_backward": "autograd issue: grad split along dim into the inputs' sizes (empty 1-D inputs skipped)",
    "negated": "autograd issue: an int list with every element negated",
    "last_sizes": "the last n sizes of a tensor (unfold's and adaptive pooling's backward)",
    "unsqueeze_multiple": "autograd issue: grad with size-1 dims inserted at each of dims",
    # indexing (eager/ops/indexing.yaml); autograd issue
    "take_backward": "autograd issue: zeros like self with grad accumulated at take's flat indices (put_ with accumulate)",
    "masked_scatter_backward": "autograd issue: masked_select(grad, mask) padded with zeros to source's numel, "
                               "reshaped to source's sizes",
    # Binary and ternary pointwise ops (eager/ops/pointwise_binary.yaml), as PyTorch's
    # FunctionsManual.cpp; defined by the autograd issue.
    "pow_backward": "autograd issue: grad of pow(Tensor, Scalar) w.r.t. self",
    "pow_backward_self": "autograd issue: grad of pow(Tensor, Tensor) w.r.t. self",
    "pow_backward_exponent": "autograd issue: grad of pow w.r.t. the exponent (uses result)",
    "clamp_backward": "autograd issue: grad where min <= self <= max, else 0",
    "clamp_backward_min": "autograd issue: grad of clamp(Tensor min, Tensor max) w.r.t. min",
    # Reductions and scans (eager/ops/reduction.yaml).
    # The fused recurrent ops (eager/ops/rnn.yaml; eager/autograd/RnnFormulas.h): the fused backward kernels,
    # or differentiable kiln ops when the backward itself is recorded (create_graph=True).
    "lstm_cell_backward": "(grad_gates, grad_cx) of _lstm_cell_fused",
    "gru_cell_backward": "(grad_input_gates, grad_hidden_gates, grad_hx) of _gru_cell_fused",
    "lstm_sequence_backward": "(grad_projected, grad_hx, grad_cx, grad_w_hh_t) of _lstm_sequence",
    # Normalisations (eager/ops/nn.yaml; eager/autograd/NormFormulas.h).
    "native_group_norm_backward": "(grad_input, grad_weight, grad_bias) of native_group_norm from the gradients of "
                                  "all three outputs (out, mean, rstd; the last two may be undefined)",
    "sum_backward": "grad broadcast back over the reduced dims",
    "mean_backward": "sum_backward over the number of reduced elements",
    "amax_backward": "grad shared evenly among the elements equal to the result",
    "value_selecting_reduction_backward": "grad scattered to the indices of max.dim/min.dim",
    "prod_backward": "result / self, the product of the others where self is 0",
    "var_backward": "2 (x - mean) / (N - correction) times grad",
    "cumsum_backward": "reverse cumulative sum of grad",
    "cumprod_backward": "reverse cumsum of grad * result over self",
    "aminmax_backward": "amax_backward of each of the two results",
    "linalg_vector_norm_backward": "d/dself of the ord-norm: sign(x) |x|^(ord-1) / norm^(ord-1), 0 where norm is 0",
    "clamp_backward_max": "autograd issue: grad of clamp(Tensor min, Tensor max) w.r.t. max",
    # Activations' second derivatives (eager/ops/activation.yaml): a branch on a
    # non-tensor argument, written with kiln ops in eager/autograd/FormulaHelpers.h.
    "gelu_double_backward": "d/dself of gelu_backward(grad_output, self, approximate), times grad",
    "mish_double_backward": "d/dself of mish_backward(grad_output, self), times grad",
    "softplus_double_backward": "d/dself of softplus_backward, times grad (grad * grad_output passed in)",
    "elu_double_backward": "d/dself_or_result of elu_backward(grad_output, ...), times grad",
    "logit_double_backward": "d/dself of logit_backward(grad_output, self, eps), times grad",
    # Triangular solve and decompositions (eager/ops/lapack.yaml): eager/autograd/LinalgFormulas.h,
    # Note [Decomposition gradients].
    "solve_triangular_backward_self": "-(A^-T grad) X^T (left) or -X^T (grad A^-T) (right), in A's triangle",
    "solve_triangular_backward_B": "A^-T grad (left) or grad A^-T (right)",
    "cholesky_backward": "L^-T sym(tril(L^T gL)) L^-1",
    "linalg_eigh_backward": "V (diag(gw) + skew(V^T gV) / 2 / (w_j - w_i)) V^T",
    "linalg_eig_backward": "V^-H (diag(gL) + (V^H gV - V^H V Re diag(V^H gV)) / conj(L_j - L_i)) V^H",
    "linalg_qr_backward": "(gQ + Q copy_upper(gR R^T - Q^T gQ)) R^-T; wide matrices split as [X | Y]",
    "lu_factor_ex_backward": "P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T, with the rows or columns past "
                             "the square part",
    "scatter_reduce_backward_self": "Note [scatter_reduce gradients]: self's share per reduction",
    "scatter_reduce_backward_src": "Note [scatter_reduce gradients]: src's share per reduction",
    "svd_backward": "U [skew(U^T gU)/E S + S skew(V^T gV)/E + diag(gS)] V^T plus the parts outside U's and V's spans",
}

_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.MatMult, ast.USub, ast.UAdd,
              ast.Not, ast.And, ast.Or, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


@dataclass(frozen=True)
class Derivative:
    input: str          # the differentiable Tensor input
    input_index: int    # its position among the schema's arguments
    formula: str        # as written (stripped)
    names: tuple[str, ...]  # argument/grad/result names the formula reads, in order of first use


def check(ops: list[Op]) -> None:
    """Checks every op's formulas and stores them in op.parsed_derivatives."""
    op_names = {op.name for op in ops}
    for op in ops:
        op.parsed_derivatives = [_check_one(op, key, formula, op_names) for key, formula in op.derivatives.items()]


def _check_one(op: Op, key: str, formula: str, op_names: set[str]) -> Derivative:
    def fail(reason: str):
        raise OpgenError(f"{op.label}: derivative for '{key}': {reason}")

    arg = op.schema.argument(key)
    if arg is None:
        fail(f"'{key}' is not an input of {op.schema}")
    if not arg.type.is_tensor_like or arg.is_out:
        fail(f"'{key}' is {arg.type}, not a differentiable Tensor input")
    formula = formula.strip()
    try:
        tree = ast.parse(formula, mode="eval")
    except SyntaxError as e:
        fail(f"syntax error in '{formula}': {e.msg} at column {e.offset}")

    n = len(op.schema.returns)
    values = {a.name for a in op.schema.arguments}
    values |= {"grad", "result"} if n == 1 else {"grads"} | {f"result{i}" for i in range(n)}
    # A Tensor[] return (split, unbind): `grads` is the whole list of its gradients.
    list_return = n == 1 and op.schema.returns[0].type.is_list
    if list_return:
        values |= {"grads"}
    callables = op_names | set(HELPERS)
    used: list[str] = []

    def visit(node: ast.AST):
        if isinstance(node, ast.Name):
            if node.id in values:
                if node.id not in used:
                    used.append(node.id)
                return
            if node.id in callables:
                fail(f"'{node.id}' is a function; call it")
            hint = " (grads[i] is for ops with several returns)" if node.id == "grad" and n != 1 else ""
            fail(f"unknown name '{node.id}' in '{formula}'{hint}; a formula may use the op's arguments, "
                 f"{'grad, result' if n == 1 else 'grads[i], result0..'}, ops in ops.yaml and opgen's helpers")
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                if node.func.id not in callables:
                    fail(f"unknown function '{node.func.id}' in '{formula}': not an op in ops.yaml nor a helper "
                         f"({', '.join(sorted(HELPERS))})")
            else:
                visit(node.func)
            for a in node.args:
                visit(a)
            for k in node.keywords:
                visit(k.value)
        elif isinstance(node, ast.Attribute):
            if node.attr not in callables:
                fail(f"unknown method or attribute '.{node.attr}' in '{formula}'")
            visit(node.value)
        elif isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Name) and node.value.id == "grads" and not list_return:
                if not (isinstance(node.slice, ast.Constant) and type(node.slice.value) is int
                        and 0 <= node.slice.value < n):
                    fail(f"grads[i] needs a constant index below {n} in '{formula}'")
            visit(node.value)
            visit(node.slice)
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float)) and node.value is not None:
                fail(f"unsupported literal {node.value!r} in '{formula}'")
        elif isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple, ast.List)):
            for child in ast.iter_child_nodes(node):
                visit(child)
        elif isinstance(node, _OPERATORS + (ast.expr_context,)):
            return
        else:
            fail(f"unsupported syntax ({type(node).__name__}) in '{formula}'")

    visit(tree.body)
    index = next(i for i, a in enumerate(op.schema.arguments) if a.name == key)
    return Derivative(key, index, formula, tuple(used))
