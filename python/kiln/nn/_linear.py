"""F.linear (the C++ linear op) and F.bilinear (composed from matmul).

Imports: kiln._C, kiln._messages (a dtype word for an error message).
"""

from __future__ import annotations

from kiln import _C
from kiln._arguments import checked_signature
from kiln._messages import _type_word


@checked_signature("linear(Tensor input, Tensor weight, Tensor? bias)")
def linear(input, weight, bias=None):
    """y = input @ weight.T + bias (the C++ op kiln.linear)."""
    return _C._functions.linear(input, weight, bias)


@checked_signature("bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias)")
def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = input1 @ weight[o] @ input2 + bias[o], composed from matmul."""
    dtypes = [input1.dtype, input2.dtype, weight.dtype] + ([bias.dtype] if bias is not None else [])
    if any(d != dtypes[0] for d in dtypes):
        names = ["input1", "input2", "weight", "bias"]
        listed = ", ".join(f"{n}: {_type_word(d)}" for n, d in zip(names, dtypes))
        raise RuntimeError(f"All tensors must have the same dtype, got {listed}")
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, but got {weight.dim()} dimensions")
    out_features, in1, in2 = weight.shape
    if input1.shape[-1] != in1 or input2.shape[-1] != in2 or tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(f"bilinear(): input sizes {list(input1.shape)} and {list(input2.shape)} do not match "
                           f"the weight size {list(weight.shape)}")
    batch = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    # (B, in1) @ (in1, out*in2) -> (B, out, in2), then a batched dot with x2.
    left = x1.matmul(weight.permute(1, 0, 2).reshape(in1, out_features * in2)).reshape(-1, out_features, in2)
    out = left.matmul(x2.unsqueeze(-1)).squeeze(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(*batch, out_features)

