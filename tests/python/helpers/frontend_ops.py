"""What the front-end tests share: copying a torch module's weights into the
same kiln module."""

from __future__ import annotations

import kiln


def load_from_torch(kiln_module, torch_module) -> None:
    """Copies torch_module's state_dict (parameters and buffers) into kiln_module, through numpy."""
    state = {k: kiln.from_numpy(v.detach().numpy().copy()) for k, v in torch_module.state_dict().items()}
    kiln_module.load_state_dict(state)
