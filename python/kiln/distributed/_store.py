"""kiln.distributed's key-value stores with torch's constructors: TCPStore,
FileStore, PrefixStore (the C++ classes of eager/distributed, subclassed here
for torch's argument lists)."""

from __future__ import annotations

import time
from datetime import timedelta

from kiln._C import _distributed

__all__ = ["FileStore", "PrefixStore", "Store", "TCPStore"]

Store = _distributed.Store
_WORKERS_KEY = "kiln/tcp_store/workers"


class TCPStore(_distributed.TCPStore):
    """torch.distributed.TCPStore: the master process serves the keys; everyone connects to host_name:port.

    With ``world_size`` and ``wait_for_workers`` the master waits (up to ``timeout``) until that many
    processes have connected, as torch's does. Port 0 on the master picks a free port (``store.port``)."""

    def __init__(self, host_name: str, port: int, world_size: int | None = None, is_master: bool = False,
                 timeout: timedelta = timedelta(seconds=300), wait_for_workers: bool = True,
                 multi_tenant: bool = False, master_listen_fd=None, use_libuv: bool = True) -> None:
        if master_listen_fd is not None:
            raise NotImplementedError("TCPStore: master_listen_fd is not supported by kiln")
        super().__init__(host_name, int(port), bool(is_master), timeout)
        if world_size is not None and world_size > 0:
            self.add(_WORKERS_KEY, 1)
            if is_master and wait_for_workers:
                _wait_for_count(self, _WORKERS_KEY, world_size, timeout)


def _wait_for_count(store, key: str, count: int, timeout: timedelta) -> None:
    deadline = time.monotonic() + timeout.total_seconds()
    while store.add(key, 0) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"TCPStore: timed out after {timeout} waiting for {count} processes to connect "
                               f"(only {store.add(key, 0)} did)")
        time.sleep(0.01)


class FileStore(_distributed.FileStore):
    """torch.distributed.FileStore: keys in a file every process can open (a shared disk across machines)."""

    def __init__(self, file_name: str, world_size: int = -1, timeout: timedelta = timedelta(seconds=300)) -> None:
        super().__init__(str(file_name), timeout)


class PrefixStore(_distributed.PrefixStore):
    """torch.distributed.PrefixStore: ``store``'s keys under ``prefix/``."""

    def __init__(self, prefix: str, store) -> None:
        super().__init__(prefix, store)
