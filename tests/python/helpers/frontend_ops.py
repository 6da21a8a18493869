"""What the front-end tests share: skip markers for tests whose kiln ops are
still on other branches (they run by themselves once the op is merged), and
copying a torch module's weights into the same kiln module."""

from __future__ import annotations

import pytest

import kiln
from kiln.nn._ops import has_op

# The branch that brings each op (for the skip reasons).
OP_BRANCH = {
    **{op: "i4-unary" for op in ("relu", "gelu", "silu", "sigmoid", "tanh", "softplus", "leaky_relu", "elu", "exp",
                                  "log", "abs", "sqrt", "rsqrt", "log1p", "hardtanh", "erfinv", "_to_copy", "neg")},
    **{op: "i4-reduce" for op in ("sum", "mean", "amax", "amin", "var")},
    **{op: "i5-nn" for op in ("softmax", "log_softmax", "cross_entropy_loss", "nll_loss", "layer_norm", "rms_norm",
                               "embedding", "dropout", "scaled_dot_product_attention", "conv1d", "conv2d",
                               "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "group_norm", "batch_norm")},
}


def needs(*ops: str):
    """Skips a test until this build of kiln has every op in ``ops``."""
    missing = [op for op in ops if not has_op(op)]
    branches = sorted({OP_BRANCH.get(op, "?") for op in missing})
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)} (branch {', '.join(branches)} "
                                                     "not merged)")


def load_from_torch(kiln_module, torch_module) -> None:
    """Copies torch_module's state_dict (parameters and buffers) into kiln_module, through numpy."""
    state = {k: kiln.from_numpy(v.detach().numpy().copy()) for k, v in torch_module.state_dict().items()}
    kiln_module.load_state_dict(state)
