"""Which ops CUDA tensors dispatch to, checked without a GPU through kiln._C._cuda_check_kernel:
every op with an eager CUDA kernel resolves at the CUDA key (its own kernel or a composite over
CUDA kernels), and an op without one raises the dispatcher's NotImplementedError naming the op
and the 'CUDA' backend, exactly as a call on a CUDA tensor would: never a silent copy to the CPU."""

import re

import pytest

import kiln

# (op, overload) pairs with a CUDA kernel of eager/kernels/cuda, or a composite over them.
WITH_CUDA_KERNELS = [
    ("native_layer_norm", ""), ("layer_norm", ""), ("_fused_rms_norm", ""), ("rms_norm", ""),
    ("_norm_backward_input", ""), ("_norm_backward_weight", ""), ("_norm_backward_bias", ""),
    ("_softmax", ""), ("_log_softmax", ""), ("_softmax_backward_data", ""), ("_log_softmax_backward_data", ""),
    ("nll_loss_forward", ""), ("nll_loss_backward", ""), ("nll_loss", ""), ("cross_entropy_loss", ""),
    ("embedding", ""), ("_embedding_dense_backward", ""),
    ("native_dropout", ""), ("dropout", ""), ("bernoulli_", "float"), ("bernoulli", "p"), ("uniform_", ""),
    ("normal_", ""),
    ("index_select", ""), ("gather", ""), ("scatter", "src"), ("scatter", "value"), ("scatter_", "src"),
    ("scatter_", "value"), ("scatter_add", ""), ("scatter_add_", ""), ("index_add", ""), ("index_add_", ""),
    ("masked_fill", "Scalar"), ("masked_fill", "Tensor"), ("masked_fill_", "Scalar"), ("masked_fill_", "Tensor"),
    ("index_put", ""), ("index_put_", ""),
    ("_fused_adam_", ""), ("_fused_sgd_", ""), ("cat", ""), ("stack", ""), ("tril", ""), ("triu_", ""),
    ("mm", ""), ("bmm", ""), ("addmm", ""), ("sum", ""), ("softmax", "int"),
    ("sigmoid_backward", ""), ("tanh_backward", ""), ("silu_backward", ""), ("gelu_backward", ""),
    ("threshold_backward", ""), ("scatter_reduce", "two"),
]

# A sample of ops with no CUDA kernel yet.
WITHOUT_CUDA_KERNELS = [
    ("cumsum", ""), ("sort", "stable"), ("topk", ""), ("_convolution2d", ""), ("max_pool2d_with_indices", ""),
    ("native_batch_norm", ""), ("scatter_reduce", "two_out"), ("index_fill_", "int_Scalar"), ("take", ""),
    ("exponential_", ""), ("_conv2d_backward_weight", ""), ("index_put", "out"), ("hardtanh_backward", ""),
]


@pytest.mark.parametrize("op,overload", WITH_CUDA_KERNELS, ids=lambda v: v or "-")
def test_op_resolves_at_the_cuda_key(op, overload):
    assert kiln._C._cuda_check_kernel(f"kiln::{op}", overload) is True


@pytest.mark.parametrize("op,overload", WITHOUT_CUDA_KERNELS, ids=lambda v: v or "-")
def test_op_without_a_cuda_kernel_raises_naming_the_op_and_cuda(op, overload):
    # (An overload kiln lacks raises RuntimeError "no operator ...", which this does not accept.)
    name = f"kiln::{op}" + (f".{overload}" if overload else "")
    message = f"Could not run '{name}' with arguments from the 'CUDA' backend"
    with pytest.raises(NotImplementedError, match=re.escape(message)):
        kiln._C._cuda_check_kernel(f"kiln::{op}", overload)
