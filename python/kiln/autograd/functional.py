"""kiln.autograd.functional: vjp, jvp, jacobian, hessian, vhp and hvp, as
torch.autograd.functional (same signatures, options, output structures —
a single tensor where the inputs/outputs were one tensor, tuples where they
were tuples — and errors).

Everything is reverse mode on kiln's autograd: ``jvp`` and ``hvp`` by the
double-backward trick, as torch's. Inputs are copied into fresh tensors that
require grad (``view_as`` when ``create_graph`` and the input already requires
grad, so the result stays differentiable w.r.t. it); results are detached
unless ``create_graph``.

Knowing differences: ``vectorize=True`` loops over the rows (one backward per
output element) instead of batching them; the results are the same.
``strategy="forward-mode"`` (which, as torch, needs ``vectorize=True``) computes
the same Jacobian by reverse-mode rows, cast to the output's dtype as forward
mode's is.
"""

from __future__ import annotations

from kiln import _C
from kiln.autograd._engine import grad as _engine_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# --- shared steps --------------------------------------------------------------------------------------------------

from kiln.autograd.grad_mode import set_grad_enabled  # noqa: E402


def _enable_grad(enabled: bool = True):
    return set_grad_enabled(enabled)


def _as_tuple(value, arg_name: str, fn_name: str):
    """(was it a tuple, the tensors as a tuple), with torch's TypeError for non-tensors."""
    is_tuple = isinstance(value, tuple)
    values = value if is_tuple else (value,)
    for i, el in enumerate(values):
        if not isinstance(el, _C.TensorBase):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the "
                            f"{where} has type {type(el)}.")
    return is_tuple, values


def _untuple(result, was_tuple):
    """Undoes _as_tuple: ``was_tuple`` is one flag, or (outer, inner) for nested tuples."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            result = tuple(el[0] for el in result)
        return result if outer else result[0]
    return result if was_tuple else result[0]


def _prepare(inputs, create_graph: bool, need_graph: bool):
    """Fresh tensor objects for the inputs (see the module docstring)."""
    out = []
    for x in inputs:
        if create_graph and x.requires_grad:
            out.append(x.view_as(x))
        else:
            out.append(x.detach().requires_grad_(need_graph))
    return tuple(out)


def _finish(values, create_graph: bool):
    if create_graph:
        return values
    return tuple(_finish(v, create_graph) if isinstance(v, tuple) else v.detach() for v in values)


def _validate_v(v, other, other_is_tuple: bool) -> None:
    if len(other) != len(v):
        if other_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prefix = f"Entry {idx} in " if other_is_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {el_other.size()} but got {el_v.size()}.")


def _check_requires_grad(values, kind: str, strict: bool) -> None:
    if not strict:
        return
    for i, x in enumerate(values):
        if x is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode.")
        if x.requires_grad:
            continue
        if kind == "hessian":
            raise RuntimeError(f"The hessian of the user-provided function with respect to input {i} is independent "
                               "of the input. This is not allowed in strict mode. You should ensure that your "
                               "function is thrice differentiable and that the hessian depends on the inputs.")
        if kind == "jacobian":
            raise RuntimeError("While computing the hessian, found that the jacobian of the user-provided function "
                               f"with respect to input {i} is independent of the input. This is not allowed in strict "
                               "mode. You should ensure that your function is twice differentiable and that the "
                               "jacobian depends on the inputs (this would be violated by a linear function for "
                               "example).")
        if kind == "grad_inputs":
            raise RuntimeError(f"The gradient with respect to input {i} is independent of the inputs of the "
                               "user-provided function. This is not allowed in strict mode.")
        raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs must "
                           "be computed in a differentiable manner from the input when running in strict mode.")


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad over the outputs that require grad (None entries allowed); None for unused inputs."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _engine_grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True,
                         create_graph=create_graph, retain_graph=retain_graph)


_NONE_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when using "
                  "the double backward trick to compute forward mode gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                   "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the grad_jacobian. "
                         "This is not allowed in strict mode as it prevents from using the double backward trick to "
                         "replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict: bool, create_graph: bool, stage: str):
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_NONE_MESSAGES[stage].format(i=i))
            g = refs[i].new_zeros(refs[i].shape)
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode when create_graph=True.")
        out.append(g)
    return tuple(out)


def _prepare_v(v, reference, reference_is_tuple, create_graph, fn_name, none_message):
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _prepare(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, reference, reference_is_tuple)
        return v
    if len(reference) != 1 or reference[0].nelement() != 1:
        raise RuntimeError(none_message)
    return None


# --- the API -------------------------------------------------------------------------------------------------------

def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``, as torch.autograd.functional.vjp."""
    with _enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph=create_graph, need_graph=True)
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        v = _prepare_v(v, outputs, outputs_tuple, create_graph, "vjp",
                       "The vector v can only be None if the user-provided function returns a single Tensor with a "
                       "single element.")
    with _enable_grad(True if create_graph else _C.is_grad_enabled()):
        res = _grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "back")
    return _untuple(_finish(outputs, create_graph), outputs_tuple), _untuple(_finish(res, create_graph), inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)`` by the double-backward trick, as torch.autograd.functional.jvp."""
    with _enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, inputs_tuple, create_graph, "jvp",
                       "The vector v can only be None if the input to the user-provided function is a single Tensor "
                       "with a single element.")
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        # The backward is linear in grad_outputs, so their (finite) value does not matter.
        dummies = tuple(o.new_zeros(o.shape).requires_grad_() for o in outputs)
        grad_inputs = _grad(outputs, inputs, dummies, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with _enable_grad(True if create_graph else _C.is_grad_enabled()):
        res = _grad(grad_inputs, dummies, v, create_graph=create_graph)
        res = _fill_in_zeros(res, outputs, strict, create_graph, "back_trick")
    return _untuple(_finish(outputs, create_graph), outputs_tuple), _untuple(_finish(res, create_graph), outputs_tuple)


def _jacobian_rows(outputs, inputs, create_graph: bool, strict: bool):
    """jac[i][k] of output i w.r.t. input k, one backward per output element."""
    jac = []
    for i, out in enumerate(outputs):
        rows = [[] for _ in inputs]
        flat = out.reshape(-1)
        for j in range(out.nelement()):
            grads = _grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
            for k, (g, inp) in enumerate(zip(grads, inputs)):
                if g is not None:
                    if strict and create_graph and not g.requires_grad:
                        raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. "
                                           "This is not allowed in strict mode when create_graph=True.")
                    rows[k].append(g)
                else:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {k}. "
                                           "This is not allowed in strict mode.")
                    rows[k].append(inp.new_zeros(inp.shape))
        jac.append(tuple(
            _C._functions.stack(rows[k]).view(tuple(out.shape) + tuple(inp.shape)) if rows[k]
            else inp.new_zeros(tuple(out.shape) + tuple(inp.shape))
            for k, inp in enumerate(inputs)))
    return tuple(jac)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``, as torch.autograd.functional.jacobian."""
    return _jacobian(func, inputs, create_graph, strict, vectorize, strategy, False)


def _jacobian(func, inputs, create_graph, strict, vectorize, strategy, forward_graph: bool):
    """``forward_graph``: hessian's outer forward-mode Jacobian, whose inputs torch
    marks as requiring grad (so its result keeps a graph, as torch's does)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function '
                             'has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, '
                             'prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("kiln.autograd.functional.jacobian: `create_graph=True` and "
                                      '`strategy="forward-mode"` are not supported together (yet). Please either set '
                                      '`create_graph=False` or `strategy="reverse-mode"`.')
        return _forward_mode_jacobian(func, inputs, strict, vectorize, forward_graph)
    with _enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph=create_graph, need_graph=True)
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError("kiln.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                               "supported together. Please either set `strict=False` or `vectorize=False`.")
        jac = _finish(_jacobian_rows(outputs, inputs, create_graph, strict), create_graph)
        return _untuple(jac, (outputs_tuple, inputs_tuple))


def _forward_mode_jacobian(func, inputs, strict, vectorize, forward_graph: bool):
    """torch's forward-mode Jacobian, computed by reverse-mode rows: blocks in the
    output's dtype, lists (not tuples) as torch's, and a graph when the inputs
    require grad (forward-mode tangents of such inputs carry one in torch)."""
    if strict:
        raise RuntimeError('kiln.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not '
                           'supported together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.')
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                  "only implemented for `vectorize=True`.")
    graph = forward_graph or any(x.requires_grad for x in inputs)
    with _enable_grad():
        inputs = _prepare(inputs, create_graph=graph, need_graph=True)
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs", "jacobian")
        jac = _jacobian_rows(outputs, inputs, graph, False)
    jac = [[b if b.dtype == o.dtype else b.to(o.dtype) for b in row] for row, o in zip(jac, outputs)]
    if not graph:
        jac = [[b.detach() for b in row] for row in jac]
    return _untuple(jac, (outputs_tuple, inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of the scalar ``func`` at ``inputs``, as torch.autograd.functional.hessian."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def single_output(*inp):
        out = func(*inp)
        out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict)
        if out_tuple or not isinstance(out, _C.TensorBase):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        jac = jacobian(single_output, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = _jacobian(jac_func, inputs, create_graph, strict, vectorize, outer_jacobian_strategy,
                    outer_jacobian_strategy == "forward-mode")
    return _untuple(res, (inputs_tuple, inputs_tuple))


def _scalar_output(func, inputs, name: str, strict: bool):
    outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", name)
    _check_requires_grad(outputs, "outputs", strict)
    if outputs_tuple or not isinstance(outputs[0], _C.TensorBase):
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should contain a single element")
    return outputs_tuple, outputs


_V_NONE_INPUT = ("The vector v can only be None if the input to the user-provided function is a single Tensor with a "
                 "single element.")


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)``, as torch.autograd.functional.vhp."""
    with _enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _prepare(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, inputs_tuple, create_graph, "vhp", _V_NONE_INPUT)
        outputs_tuple, outputs = _scalar_output(func, inputs, "vhp", strict)
        jac = _grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
    with _enable_grad(True if create_graph else _C.is_grad_enabled()):
        res = _grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "double_back")
    return _untuple(_finish(outputs, create_graph), outputs_tuple), _untuple(_finish(res, create_graph), inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)`` by the double-backward trick, as torch.autograd.functional.hvp."""
    with _enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _prepare(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, inputs_tuple, create_graph, "hvp", _V_NONE_INPUT)
        outputs_tuple, outputs = _scalar_output(func, inputs, "hvp", strict)
        jac = _grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        grad_jac = tuple(x.new_zeros(x.shape).requires_grad_() for x in inputs)
        double_back = _grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with _enable_grad(True if create_graph else _C.is_grad_enabled()):
        res = _grad(double_back, grad_jac, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "double_back_trick")
    return _untuple(_finish(outputs, create_graph), outputs_tuple), _untuple(_finish(res, create_graph), inputs_tuple)
