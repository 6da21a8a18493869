"""The unpicklers of kiln.load: the restricted one (weights_only=True) and the full one.

Note [What weights_only=True may run]
-------------------------------------
A pickle runs code only by calling what it names: a global it looks up (GLOBAL,
STACK_GLOBAL, INST, OBJ, EXT*), then called (REDUCE, NEWOBJ, INST, OBJ) or used
to fill an object (BUILD calls ``__setstate__``; APPEND/SETITEM call the
target's ``append``/``__setitem__``). The restricted unpickler is Python's
pure-Python one with every one of those steps checked: ``find_class`` returns
only an allow-listed global (DEFAULT_GLOBALS: tensors' rebuild functions,
dtypes, storages, plain containers; plus the user's add_safe_globals); REDUCE
and NEWOBJ call only such a global; BUILD fills only an instance of an
allow-listed class; APPEND, SETITEM and ADDITEMS fill only a list, a dict
(OrderedDict, Counter) or a set. A persistent id must be a storage record of
the file. Anything else is a pickle.UnpicklingError naming the global, before
it is called. Malformed pickles (a truncated stream, a bad memo reference) are
an UnpicklingError too, never a crash: the pure-Python unpickler has no C state
to corrupt, and tensor views are bounds-checked (_rebuild.py).
"""

from __future__ import annotations

import _compat_pickle
import pickle
from collections import Counter, OrderedDict

from kiln.serialization._safe_globals import DEFAULT_GLOBALS, user_globals
from kiln.serialization._storage import StorageType
from kiln.serialization._torch_names import TORCH_GLOBALS, is_torch_module, kiln_twin

UNSAFE_HINT = ("Loading with weights_only=False runs any code the file names: do it only for a file from a "
               "trusted source.")


def _refusal(full_name: str) -> pickle.UnpicklingError:
    return pickle.UnpicklingError(
        f"kiln.load: refusing to load '{full_name}' with weights_only=True: it is not an allowed global "
        f"(tensors, parameters, dtypes and plain containers are). If you trust it, allow it with "
        f"kiln.serialization.add_safe_globals([{full_name}]) or the kiln.serialization.safe_globals([...]) "
        f"context manager. {UNSAFE_HINT}")


def fix_py2_name(module: str, name: str) -> tuple[str, str]:
    """Python 2 names in protocol 0-2 pickles, as pickle maps them."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def allowed_globals() -> dict[str, object]:
    return {**DEFAULT_GLOBALS, **user_globals()}


def allowed_global(allowed: dict[str, object], module: str, name: str):
    """The allowed object for ``module.name`` (a torch name the user allowed by its kiln twin too), or None."""
    found = allowed.get(f"{module}.{name}")
    if found is None and is_torch_module(module):
        found = allowed.get(f"kiln{module[len('torch'):]}.{name}")
    return found


def _check_persistent_id(pid) -> None:
    if not (type(pid) is tuple and len(pid) == 5 and pid[0] in ("storage", b"storage")
            and isinstance(pid[1], StorageType)):
        raise pickle.UnpicklingError(f"kiln.load: corrupt checkpoint: persistent id {pid!r} is not a storage record")


class WeightsOnlyUnpickler(pickle._Unpickler):  # type: ignore[name-defined]
    """Rebuilds tensors, parameters and plain containers; refuses everything else (Note [What weights_only=True
    may run])."""

    dispatch = dict(pickle._Unpickler.dispatch)  # type: ignore[attr-defined]

    def __init__(self, file, load_storage, encoding: str = "utf-8") -> None:
        super().__init__(file, encoding=encoding)
        self._load_storage = load_storage
        self._allowed = allowed_globals()
        self._allowed_ids = {id(obj) for obj in self._allowed.values()}
        self._allowed_types = {obj for obj in self._allowed.values() if isinstance(obj, type)}

    def find_class(self, module, name):
        if self.proto < 3:
            module, name = fix_py2_name(module, name)
        found = allowed_global(self._allowed, module, name)
        if found is None:
            raise _refusal(f"{module}.{name}")
        return found

    def persistent_load(self, pid):
        _check_persistent_id(pid)
        return self._load_storage(pid)

    def _check_callable(self, func, opcode: str) -> None:
        if id(func) not in self._allowed_ids:
            raise pickle.UnpicklingError(f"kiln.load: refusing to call {func!r} ({opcode}) with weights_only=True: "
                                         f"only allowed globals are called. {UNSAFE_HINT}")

    def load_reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        self._check_callable(func, "REDUCE")
        if type(args) is not tuple:
            raise pickle.UnpicklingError("kiln.load: corrupt checkpoint: REDUCE arguments are not a tuple")
        self.stack[-1] = func(*args)

    def load_newobj(self):
        args = self.stack.pop()
        cls = self.stack.pop()
        self._check_callable(cls, "NEWOBJ")
        if cls not in self._allowed_types or type(args) is not tuple:
            raise pickle.UnpicklingError(f"kiln.load: corrupt checkpoint: NEWOBJ of {cls!r}")
        self.append(cls.__new__(cls, *args))

    def load_newobj_ex(self):
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        self._check_callable(cls, "NEWOBJ_EX")
        if cls not in self._allowed_types or type(args) is not tuple or type(kwargs) is not dict:
            raise pickle.UnpicklingError(f"kiln.load: corrupt checkpoint: NEWOBJ_EX of {cls!r}")
        self.append(cls.__new__(cls, *args, **kwargs))

    def load_build(self):
        inst = self.stack[-2]  # under the state
        if isinstance(inst, type) or type(inst) not in self._allowed_types:
            raise pickle.UnpicklingError(f"kiln.load: refusing to set the state of {type(inst).__name__} "
                                         f"(BUILD) with weights_only=True: only instances of allowed classes are "
                                         f"filled. {UNSAFE_HINT}")
        super().load_build()

    def load_append(self):
        self._check_container(self.stack[-2], (list,), "APPEND")
        super().load_append()

    def load_appends(self):
        self._check_container(self.metastack[-1][-1], (list,), "APPENDS")
        super().load_appends()

    def load_setitem(self):
        self._check_container(self.stack[-3], (dict, OrderedDict, Counter), "SETITEM")
        super().load_setitem()

    def load_setitems(self):
        self._check_container(self.metastack[-1][-1], (dict, OrderedDict, Counter), "SETITEMS")
        super().load_setitems()

    def load_additems(self):
        self._check_container(self.metastack[-1][-1], (set,), "ADDITEMS")
        super().load_additems()

    @staticmethod
    def _check_container(target, types: tuple, opcode: str) -> None:
        if type(target) not in types:
            raise pickle.UnpicklingError(f"kiln.load: corrupt checkpoint: {opcode} into {type(target).__name__}, "
                                         f"not into {' or '.join(t.__name__ for t in types)}")

    for _opcode, _method in ((pickle.REDUCE, load_reduce), (pickle.NEWOBJ, load_newobj),
                             (pickle.NEWOBJ_EX, load_newobj_ex), (pickle.BUILD, load_build),
                             (pickle.APPEND, load_append), (pickle.APPENDS, load_appends),
                             (pickle.SETITEM, load_setitem), (pickle.SETITEMS, load_setitems),
                             (pickle.ADDITEMS, load_additems)):
        dispatch[_opcode[0]] = _method
    del _opcode, _method


def full_unpickler_class(base: type):
    """An unpickler over ``base`` (pickle.Unpickler or a pickle_module's) that resolves torch's names to kiln's
    objects and loads the file's storages: weights_only=False, which runs what the file names."""

    class FullUnpickler(base):  # type: ignore[misc, valid-type]
        def __init__(self, file, load_storage, **kwargs) -> None:
            super().__init__(file, **kwargs)
            self._load_storage = load_storage

        def find_class(self, module, name):
            found = TORCH_GLOBALS.get(f"{module}.{name}")
            if found is not None:
                return found
            if is_torch_module(module):
                found = kiln_twin(module, name)
                if found is None:
                    raise pickle.UnpicklingError(f"kiln.load: the checkpoint names '{module}.{name}', which kiln "
                                                 f"has no twin for (kiln looked for 'kiln{module[5:]}.{name}')")
                return found
            return super().find_class(module, name)

        def persistent_load(self, pid):
            _check_persistent_id(pid)
            return self._load_storage(pid)

    return FullUnpickler
