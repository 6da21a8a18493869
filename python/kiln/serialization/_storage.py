"""The storages of a checkpoint: the torch storage classes a record is typed by,
the storage kiln.save writes once however many tensors view it, and the storage
kiln.load reads once however many tensors rebuild on it.

Note [One record per storage]
-----------------------------
PyTorch's checkpoint pickles each tensor as a call
``_rebuild_tensor_v2(storage, storage_offset, size, stride, ...)`` whose storage
is a persistent id ``("storage", <torch.FloatStorage>, key, location, numel)``:
the pickle names the storage, and the bytes live in the record ``data/<key>`` of
the zip. Every tensor viewing one storage (tied weights, a view and its base)
names the same key, so the bytes are written once and, on load, every tensor is
a view of the one storage read back: views keep their offsets and strides, and
tensors that shared memory when saved share it when loaded. kiln has no Python
storage objects; a storage is the 1-D tensor over all of its bytes (``flat``),
found from any view with ``kiln._C._storage_info`` (its identity and size).
"""

from __future__ import annotations

from kiln import _C

# kiln dtype name -> the torch storage class torch.save names for it.
_STORAGE_CLASS_OF_DTYPE = {
    "float64": "DoubleStorage", "float32": "FloatStorage", "float16": "HalfStorage", "bfloat16": "BFloat16Storage",
    "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage", "int64": "LongStorage",
    "int32": "IntStorage", "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage",
    "bool": "BoolStorage",
}


def dtype_name(dtype) -> str:
    return str(dtype).removeprefix("kiln.")


class StorageType:
    """A torch storage class named in a checkpoint (``torch.FloatStorage``,
    ``torch.storage.UntypedStorage``): what dtype the record's bytes hold."""

    def __init__(self, module: str, name: str, dtype) -> None:
        self.module = module
        self.name = name
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"<storage type {self.module}.{self.name} of {self.dtype}>"

    def __reduce__(self):
        return self.name  # a global: the pickler writes it under its torch name (_torch_names.py)


STORAGE_TYPES: dict[str, StorageType] = {
    name: StorageType("torch", name, getattr(_C, dtype)) for dtype, name in _STORAGE_CLASS_OF_DTYPE.items()
}
UNTYPED_STORAGE = StorageType("torch.storage", "UntypedStorage", _C.uint8)
_STORAGE_TYPE_OF_DTYPE = {t.dtype: t for t in STORAGE_TYPES.values()}


def location_of(device) -> str:
    """torch's location tag of a device: ``cpu``, ``cuda:0``."""
    if device.type == "cpu":
        return "cpu"
    return f"{device.type}:{device.index if device.index is not None else 0}"


class SavedStorage:
    """A storage kiln.save writes as one record; the pickle refers to it by its persistent id."""

    __slots__ = ("flat", "key", "location")

    def __init__(self, flat, key: str, location: str) -> None:
        self.flat = flat
        self.key = key
        self.location = location

    def persistent_id(self) -> tuple:
        storage_type = _STORAGE_TYPE_OF_DTYPE.get(self.flat.dtype)
        if storage_type is None:
            raise TypeError(f"kiln.save: torch's checkpoint format has no storage type for dtype {self.flat.dtype}")
        return ("storage", storage_type, self.key, self.location, self.flat.numel())

    def raw_bytes(self):
        """The storage's bytes as a buffer (a numpy array over CPU memory, no copy for CPU storages)."""
        flat = self.flat if self.flat.device.type == "cpu" else self.flat.cpu()
        return flat.view(_C.uint8).numpy()


class StorageTable:
    """The storages met while pickling, by identity, in the order first met."""

    def __init__(self) -> None:
        self.by_identity: dict[int, SavedStorage] = {}
        self._empty: list[SavedStorage] = []

    def storage_of(self, tensor) -> SavedStorage:
        identity, nbytes = _C._storage_info(tensor)
        if nbytes == 0:  # empty storages share no memory: one record each, whatever the dtype
            saved = SavedStorage(tensor.detach().reshape(0), self._next_key(), location_of(tensor.device))
            self._empty.append(saved)
            return saved
        saved = self.by_identity.get(identity)
        if saved is not None:
            if saved.flat.dtype is not tensor.dtype:
                raise RuntimeError("kiln.save: cannot save multiple tensors or storages that view the same data "
                                   f"as different types ({saved.flat.dtype} and {tensor.dtype})")
            return saved
        itemsize = tensor.element_size()
        flat = tensor.detach().as_strided([nbytes // itemsize], [1], 0)
        saved = SavedStorage(flat, self._next_key(), location_of(tensor.device))
        self.by_identity[identity] = saved
        return saved

    def _next_key(self) -> str:
        return str(len(self.by_identity) + len(self._empty))

    def __iter__(self):
        return iter(sorted([*self.by_identity.values(), *self._empty], key=lambda s: int(s.key)))


class LoadedStorage:
    """A storage read back from a record: the 1-D tensor of its elements, on the device it maps to."""

    __slots__ = ("flat", "location")

    def __init__(self, flat, location: str) -> None:
        self.flat = flat
        self.location = location

    @property
    def dtype(self):
        return self.flat.dtype

    def __repr__(self) -> str:
        return f"<storage {self.location} of {self.flat.numel()} {self.flat.dtype}>"
