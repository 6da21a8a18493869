"""Rendezvous: from init_process_group's init_method (env://, tcp://, file://)
to a store, this process's rank and the world size, with torchrun's
environment contract (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import parse_qs, unquote, urlparse

from kiln.distributed._store import FileStore, TCPStore

__all__ = ["Rendezvous", "rendezvous", "gloo_device_address"]


@dataclass
class Rendezvous:
    """Where the processes met: the store, this process's rank, the world size, the master's address."""

    store: object
    rank: int
    world_size: int
    master_addr: str | None


def _env(name: str, method: str) -> str:
    value = os.environ.get(name)
    if value is None:
        raise ValueError(f"Error initializing kiln.distributed using {method} rendezvous: environment variable "
                         f"{name} expected, but not set")
    return value


def _env_int(name: str, method: str) -> int:
    value = _env(name, method)
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"Error initializing kiln.distributed using {method} rendezvous: environment variable "
                         f"{name} must be an integer, got {value!r}") from None


def _rank_and_size(query: dict, rank: int, world_size: int, method: str) -> tuple[int, int]:
    if rank < 0:
        rank = int(query["rank"][0]) if "rank" in query else _env_int("RANK", method)
    if world_size < 0:
        world_size = int(query["world_size"][0]) if "world_size" in query else _env_int("WORLD_SIZE", method)
    if world_size < 1:
        raise ValueError(f"world_size must be positive, got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is out of range for world_size {world_size}")
    return rank, world_size


def rendezvous(init_method: str, rank: int, world_size: int, timeout: timedelta) -> Rendezvous:
    """The store and ranks an init_method names (``rank``/``world_size`` of -1 are read from it or the env)."""
    url = urlparse(init_method)
    query = parse_qs(url.query)
    if url.scheme == "env":
        method = "env://"
        rank, world_size = _rank_and_size({}, rank, world_size, method)
        addr = _env("MASTER_ADDR", method)
        port = _env_int("MASTER_PORT", method)
        store = TCPStore(addr, port, world_size, rank == 0, timeout)
        return Rendezvous(store, rank, world_size, addr)
    if url.scheme == "tcp":
        if not url.hostname or url.port is None:
            raise ValueError(f"tcp:// init_method needs a host and a port, e.g. tcp://127.0.0.1:29500, "
                             f"got {init_method!r}")
        rank, world_size = _rank_and_size(query, rank, world_size, "tcp://")
        store = TCPStore(url.hostname, url.port, world_size, rank == 0, timeout)
        return Rendezvous(store, rank, world_size, url.hostname)
    if url.scheme == "file":
        path = unquote(url.path)
        if not path:
            raise ValueError(f"file:// init_method needs a path, e.g. file:///tmp/rendezvous, got {init_method!r}")
        rank, world_size = _rank_and_size(query, rank, world_size, "file://")
        return Rendezvous(FileStore(path, world_size, timeout), rank, world_size, None)
    raise ValueError(f"No rendezvous handler for {url.scheme}:// (kiln.distributed knows env://, tcp:// and file://)")


def gloo_device_address(master_addr: str | None) -> tuple[str, str]:
    """(hostname, interface) for this process's Gloo device.

    GLOO_SOCKET_IFNAME names an interface, as with torch. Otherwise a job whose master is this machine
    (or that met through a file) listens on loopback; one whose master is elsewhere listens on the
    address this machine reaches the master from (a UDP socket's route, no packet sent)."""
    interface = os.environ.get("GLOO_SOCKET_IFNAME", "")
    if interface:
        return "", interface.split(",")[0]
    if master_addr is None or _is_local(master_addr):
        return "127.0.0.1", ""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((master_addr, 9))
            return probe.getsockname()[0], ""
    except OSError:
        return socket.gethostname(), ""


def _is_local(host: str) -> bool:
    if host in ("localhost", "127.0.0.1", "::1", "0.0.0.0"):
        return True
    try:
        address = socket.gethostbyname(host)
    except OSError:
        return False
    return address.startswith("127.")
