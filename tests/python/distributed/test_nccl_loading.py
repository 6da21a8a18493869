"""NCCL is loaded with dlopen at first use, never linked: importing kiln.distributed loads nothing,
is_nccl_available() is False (no error) where libnccl.so.2 does not load, and
init_process_group("nccl") raises torch's RuntimeError naming what is missing. Run in a fresh
interpreter with KILN_NCCL_LIBRARY pointing nowhere, so the answer does not depend on whether
this machine has NCCL (or on another test having loaded it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, sys
import kiln.distributed as dist
out = {"available": dist.is_nccl_available(), "backend_available": dist.is_backend_available("nccl"),
       "gloo": dist.is_backend_available("gloo")}
try:
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:1", rank=0, world_size=1)
    out["error"] = None
except Exception as e:
    out["error"] = [type(e).__name__, str(e)]
out["initialized"] = dist.is_initialized()
if out["available"]:
    from kiln.distributed._nccl import nccl_version
    import kiln.cuda
    out["version"] = list(nccl_version())
    out["gpus"] = kiln.cuda.device_count()
print(json.dumps(out))
"""

# A stand-in libnccl.so.2 with every entry point kiln resolves: ncclGetVersion answers 2.21.5, the
# rest fail (kiln must not call them without a GPU).
FAKE_NCCL = r"""
typedef struct { char internal[128]; } ncclUniqueId;
int ncclGetVersion(int* v) { *v = 22105; return 0; }
const char* ncclGetErrorString(int r) { return "fake NCCL"; }
#define FAIL(name) int name() { return 1; }
FAIL(ncclGetUniqueId) FAIL(ncclCommInitRank) FAIL(ncclCommDestroy) FAIL(ncclCommAbort) FAIL(ncclAllReduce)
FAIL(ncclBroadcast) FAIL(ncclAllGather) FAIL(ncclReduceScatter) FAIL(ncclSend) FAIL(ncclRecv)
FAIL(ncclGroupStart) FAIL(ncclGroupEnd) FAIL(ncclCommGetAsyncError) FAIL(ncclReduce)
"""


def _run(env_library: str) -> dict:
    env = dict(os.environ, KILN_NCCL_LIBRARY=env_library)
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_missing_nccl_is_reported_not_raised_at_import(tmp_path):
    bogus = str(tmp_path / "nowhere" / "libnccl.so.2")
    out = _run(bogus)
    assert out["available"] is False and out["backend_available"] is False and out["gloo"] is True
    kind, message = out["error"]
    assert kind == "RuntimeError"
    assert message.startswith("Distributed package doesn't have NCCL built in")
    assert "libnccl.so.2" in message and bogus in message and "nvidia-nccl-cu13" in message
    assert "backend='gloo'" in message
    assert out["initialized"] is False


def test_a_loadable_nccl_is_found_and_the_missing_gpu_named(tmp_path):
    source = tmp_path / "fake_nccl.c"
    source.write_text(FAKE_NCCL)
    library = tmp_path / "libnccl.so.2"
    # kiln builds with a C++ toolchain, so a C compiler is where these tests run.
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True, timeout=60)
    out = _run(str(library))
    assert out["available"] is True and out["backend_available"] is True and out["version"] == [2, 21, 5]
    kind, message = out["error"]
    assert kind == "RuntimeError" and out["initialized"] is False
    if out["gpus"] == 0:
        assert message.startswith("ProcessGroupNCCL is only supported with GPUs, no GPUs found!")
    else:  # the fake's ncclGetUniqueId fails: kiln names NCCL's call and message
        assert "NCCL error in ncclGetUniqueId: fake NCCL" in message


REAL_NCCL_SCRIPT = r"""
import json
from datetime import timedelta
import kiln.distributed as dist
from kiln._C import _distributed
from kiln.distributed._nccl import nccl_version
import kiln.cuda
out = {"available": dist.is_nccl_available(), "version": list(nccl_version()), "gpus": kiln.cuda.device_count()}
store = _distributed.FileStore(__import__("sys").argv[1], timedelta(seconds=5))
try:
    _distributed.ProcessGroupNCCL(store, 0, 1, timedelta(seconds=5))
    out["direct"] = None
except Exception as e:
    out["direct"] = [type(e).__name__, str(e)]
dist.init_process_group("gloo", init_method="file://" + __import__("sys").argv[2], rank=0, world_size=1)
try:
    dist.new_group([0], backend="nccl")
    out["new_group"] = None
except Exception as e:
    out["new_group"] = [type(e).__name__, str(e)]
print(json.dumps(out))
"""


def test_the_nccl_wheel_loads_and_every_entry_point_resolves(tmp_path):
    """setup.sh installs nvidia-nccl-cu13: kiln finds its libnccl.so.2 in the wheel's folder, resolves
    the 16 entry points, reads its version; without a GPU both ways to a NCCL group say so."""
    pytest.importorskip("nvidia.nccl", reason="optional package nvidia-nccl-cu13 is not installed")
    env = {k: v for k, v in os.environ.items() if k != "KILN_NCCL_LIBRARY"}
    done = subprocess.run([sys.executable, "-c", REAL_NCCL_SCRIPT, str(tmp_path / "store"), str(tmp_path / "init")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["available"] is True
    assert tuple(out["version"]) >= (2, 10, 0)  # ncclAvg and bfloat16 came in 2.10
    if out["gpus"] == 0:
        kind, message = out["direct"]
        assert kind == "RuntimeError" and message.startswith("ProcessGroupNCCL is only supported with GPUs")
        kind, message = out["new_group"]
        assert kind == "RuntimeError" and message.startswith("ProcessGroupNCCL is only supported with GPUs")
    else:
        assert out["direct"] is None and out["new_group"] is None
