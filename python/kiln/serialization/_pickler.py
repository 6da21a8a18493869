"""The pickler of kiln.save: any picklable object, with kiln's tensors as torch's
storage records and kiln's twins of torch objects written under torch's names.

It is Python's pure-Python pickler (``pickle._Pickler``) with three hooks:
``reducer_override`` turns a tensor into a ``_rebuild_tensor_v2`` call on a
storage (Note [One record per storage]); ``persistent_id`` turns that storage
into its record's id; ``save_global`` writes a kiln twin under its torch name
(Note [Checkpoints name torch's globals]). The C pickler cannot do the last:
it looks every global up by importing its module, which would import torch.
The default protocol is 2, the one torch writes and the only one torch's
weights_only unpickler reads.
"""

from __future__ import annotations

import io
import pickle
import types
from collections import OrderedDict

from kiln import _C
from kiln._layout import layout
from kiln._tensor import Tensor
from kiln.nn.parameter import Parameter, UninitializedTensorMixin
from kiln.serialization import _rebuild
from kiln.serialization._storage import StorageTable, SavedStorage
from kiln.serialization._torch_names import SAVED_NAMES


def _object_state(obj):
    """torch._utils._get_obj_state: the instance attributes a tensor carries (None when it has none)."""
    state = getattr(obj, "__dict__", None)
    return dict(state) if state else None


class CheckpointPickler(pickle._Pickler):  # type: ignore[name-defined]
    """Pickles into PyTorch's data.pkl; ``storages`` collects the records to write."""

    def __init__(self, file, protocol: int) -> None:
        super().__init__(file, protocol)
        self.storages = StorageTable()

    def persistent_id(self, obj):
        if type(obj) is SavedStorage:
            return obj.persistent_id()
        return None

    def reducer_override(self, obj):
        if isinstance(obj, _C.TensorBase):
            return self._reduce_tensor(obj)
        if type(obj) is _C.Size:
            return (_C.Size, (tuple(obj),))
        if type(obj) is layout:
            return (_rebuild.get_layout, (f"torch.{obj._name}",))
        return NotImplemented

    def _reduce_tensor(self, t):
        if isinstance(t, UninitializedTensorMixin):
            return NotImplemented  # a lazy module's placeholder pickles itself (it has no storage)
        storage = self.storages.storage_of(t)
        args = (storage, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.requires_grad, OrderedDict())
        state = _object_state(t)
        if type(t) is Parameter:
            data = t.detach()
            if state:
                return (_rebuild.rebuild_parameter_with_state, (data, t.requires_grad, OrderedDict(), state))
            return (_rebuild.rebuild_parameter, (data, t.requires_grad, OrderedDict()))
        if type(t) in (Tensor, _C.TensorBase) and not state:
            return (_rebuild.rebuild_tensor_v2, args)
        return (_rebuild.rebuild_from_type_v2, (_rebuild.rebuild_tensor_v2, type(t), args, state or {}))

    def save_global(self, obj, name=None):
        saved_name = SAVED_NAMES.get(id(obj))
        if saved_name is None:
            return super().save_global(obj, name)
        module, qualname = saved_name
        if self.proto >= 4:
            self.save(module)
            self.save(qualname)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + module.encode("utf-8") + b"\n" + qualname.encode("utf-8") + b"\n")
        self.memoize(obj)

    # pickle._Pickler dispatches functions straight to its own save_global
    dispatch = dict(pickle._Pickler.dispatch)  # type: ignore[attr-defined]
    dispatch[types.FunctionType] = save_global


def pickle_checkpoint(obj, protocol: int) -> tuple[bytes, list[SavedStorage]]:
    """data.pkl's bytes for obj, and the storages its tensors view."""
    buf = io.BytesIO()
    pickler = CheckpointPickler(buf, protocol)
    pickler.dump(obj)
    return buf.getvalue(), list(pickler.storages)
