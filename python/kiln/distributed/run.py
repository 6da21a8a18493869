"""kiln.distributed.run: torchrun for kiln.

``python -m kiln.distributed.run --nproc-per-node N [--nnodes M --node-rank R
--master-addr A --master-port P] train.py args...`` starts N worker processes
on this node with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK, ROLE_WORLD_SIZE, MASTER_ADDR,
MASTER_PORT, TORCHELASTIC_RUN_ID, ...), so ``init_process_group()`` with its
default ``env://`` finds the job. Run it once per node, with the same master
address and port everywhere and each node's --node-rank.

It forwards SIGINT, SIGTERM, SIGHUP and SIGQUIT to the workers. When a worker
exits with an error, it stops the others (SIGTERM, then SIGKILL after a grace
period) and exits 1, naming the rank and printing the end of that worker's
error output. Restarts (torchrun's elastic --max-restarts) are not supported.
"""

from __future__ import annotations

import argparse
import collections
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

__all__ = ["main", "parse_args", "worker_environments"]

_GRACE_SECONDS = 5.0  # how long stopped workers get to exit before SIGKILL
_ERROR_TAIL_LINES = 30  # lines of a failed worker's stderr repeated in the failure report
_FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def _nproc(value: str) -> int:
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f"--nproc-per-node must be positive, got {n}")
    return n


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m kiln.distributed.run",
                                     description="Start data-parallel kiln workers (torchrun's contract).")
    parser.add_argument("--nproc-per-node", "--nproc_per_node", type=_nproc, default=1)
    parser.add_argument("--nnodes", type=int, default=1)
    parser.add_argument("--node-rank", "--node_rank", type=int, default=0)
    parser.add_argument("--master-addr", "--master_addr", default="127.0.0.1")
    parser.add_argument("--master-port", "--master_port", type=int, default=29500)
    parser.add_argument("--standalone", action="store_true",
                        help="one node; pick a free master port on localhost")
    parser.add_argument("--run-id", "--run_id", default=None)
    parser.add_argument("--max-restarts", "--max_restarts", type=int, default=0)
    parser.add_argument("-m", "--module", action="store_true", help="run training_script as a module (python -m)")
    parser.add_argument("--no-python", "--no_python", action="store_true",
                        help="run training_script as an executable, not with python")
    parser.add_argument("training_script")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.max_restarts:
        parser.error("--max-restarts: kiln.distributed.run does not restart workers (no elastic training)")
    if args.nnodes < 1 or not 0 <= args.node_rank < args.nnodes:
        parser.error(f"--node-rank {args.node_rank} is out of range for --nnodes {args.nnodes}")
    if args.standalone:
        if args.nnodes != 1:
            parser.error("--standalone runs one node; drop --nnodes")
        args.master_addr = "127.0.0.1"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            args.master_port = s.getsockname()[1]
    return args


def worker_environments(args: argparse.Namespace, base: dict[str, str] | None = None) -> list[dict[str, str]]:
    """The environment of each local worker, in local-rank order (torchrun's variables)."""
    base = dict(os.environ if base is None else base)
    world_size = args.nnodes * args.nproc_per_node
    run_id = args.run_id or base.get("TORCHELASTIC_RUN_ID") or uuid.uuid4().hex[:12]
    envs = []
    for local_rank in range(args.nproc_per_node):
        rank = args.node_rank * args.nproc_per_node + local_rank
        env = dict(base)
        env.update({
            "RANK": str(rank), "LOCAL_RANK": str(local_rank), "WORLD_SIZE": str(world_size),
            "LOCAL_WORLD_SIZE": str(args.nproc_per_node), "GROUP_RANK": str(args.node_rank),
            "GROUP_WORLD_SIZE": str(args.nnodes), "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(world_size),
            "ROLE_NAME": "default", "MASTER_ADDR": args.master_addr, "MASTER_PORT": str(args.master_port),
            "TORCHELASTIC_RUN_ID": run_id, "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
        })
        # torchrun's default: one intra-op thread per worker when several share a node, unless set.
        if args.nproc_per_node > 1 and "OMP_NUM_THREADS" not in base:
            env["OMP_NUM_THREADS"] = "1"
        envs.append(env)
    return envs


def _command(args: argparse.Namespace) -> list[str]:
    if args.no_python:
        return [args.training_script, *args.training_script_args]
    if args.module:
        return [sys.executable, "-u", "-m", args.training_script, *args.training_script_args]
    return [sys.executable, "-u", args.training_script, *args.training_script_args]


class _Worker:
    """One local worker: its process and the tail of its stderr (forwarded as it arrives)."""

    def __init__(self, rank: int, local_rank: int, command: list[str], env: dict[str, str]) -> None:
        self.rank, self.local_rank = rank, local_rank
        self.tail: collections.deque[str] = collections.deque(maxlen=_ERROR_TAIL_LINES)
        self.process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE)
        self.exited_at: float | None = None  # time.monotonic() when the process ended
        self.reader = threading.Thread(target=self._forward_stderr, daemon=True)
        self.reader.start()
        threading.Thread(target=self._wait, daemon=True).start()

    def _wait(self) -> None:
        self.process.wait()
        self.exited_at = time.monotonic()

    def _forward_stderr(self) -> None:
        for raw in iter(self.process.stderr.readline, b""):
            line = raw.decode(errors="replace")
            self.tail.append(line)
            sys.stderr.write(line)
            sys.stderr.flush()

    def signal(self, signum: int) -> None:
        if self.process.poll() is None:
            try:
                self.process.send_signal(signum)
            except ProcessLookupError:
                pass


_SETTLE_SECONDS = 0.2  # after a failure, how long the launcher lets other exits land before naming the first


def _stop(workers: list[_Worker], signum: int = signal.SIGTERM) -> None:
    for w in workers:
        w.signal(signum)
    deadline = time.monotonic() + _GRACE_SECONDS
    for w in workers:
        try:
            w.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            w.process.kill()
            w.process.wait()


def _failure_report(worker: _Worker, code: int) -> str:
    how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    lines = [f"kiln.distributed.run: worker rank {worker.rank} (local_rank {worker.local_rank}, "
             f"pid {worker.process.pid}) {how}; the other workers were stopped."]
    tail = "".join(worker.tail).rstrip()
    if tail:
        lines.append(f"rank {worker.rank}'s error output (last lines):\n{tail}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    command = _command(args)
    workers: list[_Worker] = []
    received: list[int] = []

    def forward(signum, frame) -> None:
        received.append(signum)
        for w in workers:
            w.signal(signum)

    previous = {s: signal.signal(s, forward) for s in _FORWARDED_SIGNALS}
    try:
        for local_rank, env in enumerate(worker_environments(args)):
            workers.append(_Worker(int(env["RANK"]), local_rank, command, env))
        while True:
            if received:
                _stop(workers, received[0])
                sys.stderr.write(f"kiln.distributed.run: got signal {received[0]}; the workers were stopped.\n")
                return 128 + received[0]
            codes = [w.process.poll() for w in workers]
            if any(c not in (None, 0) for c in codes):
                # The first worker to fail is the cause: the others often fail because it went
                # away (a collective's peer closed), moments later. Let those exits land, then
                # name the earliest.
                time.sleep(_SETTLE_SECONDS)
                codes = [w.process.poll() for w in workers]
                failures = [w for w, c in zip(workers, codes) if c not in (None, 0)]
                failed = min(failures, key=lambda w: w.exited_at if w.exited_at is not None else float("inf"))
                code = failed.process.returncode
                _stop([w for w in workers if w is not failed])
                failed.reader.join(timeout=1.0)
                sys.stderr.write(_failure_report(failed, code) + "\n")
                return 1
            if all(c == 0 for c in codes):
                for w in workers:
                    w.reader.join(timeout=1.0)
                return 0
            time.sleep(0.05)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if any(w.process.poll() is None for w in workers):
            _stop(workers, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
