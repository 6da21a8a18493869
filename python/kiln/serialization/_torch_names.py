"""Which torch global each kiln object of a checkpoint is, both ways.

Note [Checkpoints name torch's globals]
---------------------------------------
A pickle names the functions and classes it calls by module and name. For a
checkpoint to be read by both libraries, kiln.save writes the torch names
(``torch._utils _rebuild_tensor_v2``, ``torch FloatStorage``, ``torch float32``,
``torch Size``...) for kiln's twins, so torch.load rebuilds torch objects from a
kiln file, with weights_only=True too (these are all on torch's allow-list); and
kiln.load resolves the same names to the twins, so a torch file rebuilds kiln
objects. ``TORCH_GLOBALS`` holds the pairs; the pickler writes the first torch
name listed for an object (``SAVED_NAMES``).

Any other ``torch.*`` global (a whole ``torch.nn.Linear`` pickled with its
module) is, under weights_only=False, looked up at the same path in kiln
(``kiln.nn.modules.linear.Linear``): kiln never imports torch.
"""

from __future__ import annotations

import importlib

from kiln import _C
from kiln._layout import strided
from kiln._tensor import Tensor
from kiln.nn.parameter import Parameter
from kiln.serialization import _rebuild
from kiln.serialization._storage import STORAGE_TYPES, UNTYPED_STORAGE


def _dtypes() -> dict[str, object]:
    found = {}
    for name in dir(_C):
        value = getattr(_C, name)
        if isinstance(value, _C.dtype):
            canonical = str(value).removeprefix("kiln.")
            found[f"torch.{canonical}"] = value
    return found


TORCH_GLOBALS: dict[str, object] = {
    "torch._utils._rebuild_tensor_v2": _rebuild.rebuild_tensor_v2,
    "torch._utils._rebuild_tensor": _rebuild.rebuild_tensor,
    "torch._utils._rebuild_tensor_v3": _rebuild.rebuild_tensor_v3,
    "torch._utils._rebuild_parameter": _rebuild.rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild.rebuild_parameter_with_state,
    "torch._tensor._rebuild_from_type_v2": _rebuild.rebuild_from_type_v2,
    "torch.serialization._get_layout": _rebuild.get_layout,
    "torch.Tensor": Tensor,
    "torch.nn.parameter.Parameter": Parameter,
    "torch.Size": _C.Size,
    "torch.device": _C.device,
    "torch.strided": strided,
    **{f"torch.{fmt}": getattr(_C, fmt) for fmt in ("contiguous_format", "channels_last", "channels_last_3d",
                                                   "preserve_format")},
    **_dtypes(),
    **{f"torch.{name}": storage_type for name, storage_type in STORAGE_TYPES.items()},
    "torch.storage.UntypedStorage": UNTYPED_STORAGE,
    "torch.UntypedStorage": UNTYPED_STORAGE,
}

# id(kiln object) -> (module, name) kiln.save writes for it: the first name listed above.
SAVED_NAMES: dict[int, tuple[str, str]] = {}
for _name, _obj in TORCH_GLOBALS.items():
    SAVED_NAMES.setdefault(id(_obj), tuple(_name.rsplit(".", 1)))  # type: ignore[arg-type]
# the table's objects live as long as the module, so their ids stay theirs
_KEEP_ALIVE = list(TORCH_GLOBALS.values())


def is_torch_module(module: str) -> bool:
    return module == "torch" or module.startswith("torch.")


def kiln_twin(module: str, name: str):
    """The object at kiln's path for ``torch``'s ``module.name`` (``torch.nn.modules.linear`` ->
    ``kiln.nn.modules.linear``), or None when kiln has none."""
    kiln_module = "kiln" + module[len("torch"):]
    try:
        found = importlib.import_module(kiln_module)
    except ImportError:
        return None
    for part in name.split("."):
        found = getattr(found, part, None)
        if found is None:
            return None
    return found
