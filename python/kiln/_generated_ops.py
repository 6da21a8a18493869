"""kiln's share of the ops generated from ops.yaml (tools/opgen): the public
names of kiln._C._functions, less those torch keeps out of its top-level
namespace. kiln/__init__.py imports FUNCTIONS first; the hand-written Python
functions imported after it win where they share a name."""

from __future__ import annotations

from kiln import _C

# Ops torch keeps out of its top-level namespace (torch.nn.functional and
# torch._C._nn have them; eager/ops/activation.yaml): reachable as kiln._C._functions.<name>.
NOT_TOP_LEVEL = frozenset((
    "elu", "elu_", "elu_backward", "gelu", "gelu_backward", "hardsigmoid", "hardsigmoid_",
    "hardsigmoid_backward", "hardswish", "hardswish_", "hardswish_backward", "hardtanh", "hardtanh_",
    "hardtanh_backward", "leaky_relu", "leaky_relu_", "leaky_relu_backward", "logit_backward", "mish",
    "mish_", "mish_backward", "relu6", "sigmoid_backward", "silu", "silu_", "silu_backward", "softplus",
    "softplus_backward", "tanh_backward", "threshold_backward",
))

FUNCTIONS = {
    name: getattr(_C._functions, name)
    for name in dir(_C._functions)
    if not name.startswith("_") and name not in NOT_TOP_LEVEL
}
