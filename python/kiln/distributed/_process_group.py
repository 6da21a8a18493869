"""Process groups: the default group init_process_group makes, new_group's
subgroups, and the queries about them (get_rank, get_world_size, ...)."""

from __future__ import annotations

import os
import warnings
from datetime import timedelta

from kiln._C import _distributed
from kiln.distributed._backend import Backend, check_backend
from kiln.distributed._rendezvous import gloo_device_address, rendezvous
from kiln.distributed._store import PrefixStore
from kiln.distributed.constants import default_pg_timeout

__all__ = ["GroupMember", "ProcessGroup", "destroy_process_group", "get_backend", "get_global_rank",
           "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group",
           "is_initialized", "is_torchelastic_launched", "new_group", "default_group", "resolve_group"]

_NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."


class ProcessGroup:
    """A group of processes: the backend's group over them (_distributed.ProcessGroupGloo or
    ProcessGroupNCCL, which take the same calls), its name, and the global ranks (in group-rank order)."""

    def __init__(self, backend_group, ranks: list[int], name: str, backend: str = Backend.GLOO) -> None:
        self._backend = backend_group
        self._backend_name = backend
        self._ranks = list(ranks)
        self._name = name

    def rank(self) -> int:
        return self._backend.rank()

    def size(self) -> int:
        return self._backend.size()

    def name(self) -> str:
        return self._name

    @property
    def group_name(self) -> str:
        return self._name

    def _group_rank(self, global_rank: int, role: str) -> int:
        try:
            return self._ranks.index(global_rank)
        except ValueError:
            raise ValueError(f"{role} rank {global_rank} is not part of the group (global ranks "
                             f"{self._ranks})") from None

    def __repr__(self) -> str:
        return f"ProcessGroup(backend={self._backend_name}, name={self._name!r}, rank={self.rank()}, size={self.size()})"


class GroupMember:
    """torch's GroupMember: WORLD is the default group (None before init); NON_GROUP_MEMBER is what
    new_group returns to a process it does not include."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = object()


group = GroupMember


class _State:
    """This process's distributed state: the default group and what made it."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.default: ProcessGroup | None = None
        self.store = None
        self.rank = -1
        self.world_size = -1
        self.timeout = default_pg_timeout
        self.device_address = ("127.0.0.1", "")
        self.backend = Backend.GLOO
        self.device = -1  # the CUDA device of the NCCL groups (-1: the current one)
        self.groups: list[ProcessGroup] = []
        self.groups_made = 0


_state = _State()


def _milliseconds(timeout) -> timedelta:
    if timeout is None:
        return default_pg_timeout
    if isinstance(timeout, (int, float)):
        return timedelta(seconds=timeout)
    if not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout)}")
    return timeout


def init_process_group(backend=None, init_method=None, timeout=None, world_size: int = -1, rank: int = -1,
                       store=None, group_name: str = "", pg_options=None, device_id=None) -> None:
    """torch.distributed.init_process_group: join the default group through ``init_method``
    ("env://" by default: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT as torchrun sets them) or ``store``.
    backend "gloo" (the default) runs on CPU tensors, "nccl" on CUDA tensors of ``device_id`` (a
    kiln.device or an index; None: the current device)."""
    if _state.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    backend_name = check_backend(backend)
    timeout = _milliseconds(timeout)
    if store is not None and init_method is not None:
        raise ValueError("Cannot specify both init_method and store.")
    if store is not None:
        if world_size <= 0:
            raise ValueError("world_size must be positive if using store")
        if rank < 0:
            raise ValueError("rank must be non-negative if using store")
        master_addr = getattr(store, "host", None) or os.environ.get("MASTER_ADDR")
    else:
        met = rendezvous(init_method or "env://", rank, world_size, timeout)
        store, rank, world_size, master_addr = met.store, met.rank, met.world_size, met.master_addr
    address = gloo_device_address(master_addr)
    device = _device_index(device_id)
    made = _make_backend_group(backend_name, PrefixStore("default_pg", store), rank, world_size, timeout, address,
                               device)
    _state.store, _state.rank, _state.world_size = store, rank, world_size
    _state.timeout, _state.device_address = timeout, address
    _state.backend, _state.device = backend_name, device
    _state.default = ProcessGroup(made, list(range(world_size)), group_name or "0", backend_name)
    GroupMember.WORLD = _state.default


def _device_index(device_id) -> int:
    """The CUDA device index device_id names (-1 when None: the current device)."""
    if device_id is None:
        return -1
    if isinstance(device_id, int):
        return device_id
    index = getattr(device_id, "index", None)
    if getattr(device_id, "type", "cuda") != "cuda":
        raise ValueError(f"init_process_group: device_id must be a CUDA device, got {device_id}")
    return -1 if index is None else int(index)


def _make_backend_group(backend: str, store, rank: int, size: int, timeout, address, device: int):
    if backend == Backend.NCCL:
        return _distributed.ProcessGroupNCCL(store, rank, size, timeout, device)
    return _distributed.ProcessGroupGloo(store, rank, size, timeout, *address)


def is_initialized() -> bool:
    return _state.default is not None


def is_torchelastic_launched() -> bool:
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def default_group() -> ProcessGroup:
    if _state.default is None:
        raise ValueError(_NOT_INITIALIZED)
    return _state.default


def resolve_group(group) -> ProcessGroup | None:
    """The ProcessGroup a collective runs on (None: this process is not in it)."""
    if group is None or group is GroupMember.WORLD:
        return default_group()
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup or None, got {type(group).__name__}")
    default_group()
    return group


def get_rank(group=None) -> int:
    pg = resolve_group(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None) -> int:
    pg = resolve_group(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None) -> str:
    pg = resolve_group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg._backend_name


def get_process_group_ranks(group) -> list[int]:
    pg = resolve_group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return list(pg._ranks)


def get_global_rank(group, group_rank: int) -> int:
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    ranks = get_process_group_ranks(group)
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization: bool = False,
              group_desc=None, device_id=None):
    """torch.distributed.new_group: every process of the default group calls it, in the same order;
    the members get a ProcessGroup, the others GroupMember.NON_GROUP_MEMBER."""
    default_group()
    backend_name = _state.backend if backend is None else check_backend(backend)
    members = sorted(set(range(_state.world_size) if ranks is None else (int(r) for r in ranks)))
    for r in members:
        if not 0 <= r < _state.world_size:
            raise ValueError(f"new_group: rank {r} is out of range for world_size {_state.world_size}")
    _state.groups_made += 1
    name = str(_state.groups_made)
    if _state.rank not in members:
        return GroupMember.NON_GROUP_MEMBER
    timeout = _milliseconds(timeout) if timeout is not None else _state.timeout
    made = _make_backend_group(backend_name, PrefixStore(f"group_{name}", _state.store), members.index(_state.rank),
                               len(members), timeout, _state.device_address, _state.device)
    pg = ProcessGroup(made, members, name, backend_name)
    _state.groups.append(pg)
    return pg


def destroy_process_group(group=None) -> None:
    """Leaves ``group`` (None: every group, the default one included, and releases the store)."""
    if group is None or group is GroupMember.WORLD:
        if _state.default is None:
            raise ValueError(_NOT_INITIALIZED)
        _state.reset()
        GroupMember.WORLD = None
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if group in _state.groups:
        _state.groups.remove(group)
    else:
        warnings.warn("destroy_process_group: the group was already destroyed", stacklevel=2)
    group._backend = None
