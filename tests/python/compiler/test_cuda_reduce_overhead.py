"""mode="reduce-overhead" on CUDA without a GPU (runtime Note [CUDA graphs of a compiled graph]): the arena
laid out for a CUDA-targeted graph, and a whole run on a stand-in libcuda.so.1 whose "device memory" is host
memory and whose kernel launches and graph calls are logged, not run (kernels are proven by NVRTC/ptxas and
host emulation elsewhere; values need a GPU: test_cuda_compiled.py). Checked: the arena is one
caching-allocator block allocated once, a replay allocates only the returned tensor, the second run with the
same buffers captures the launches (the legacy default stream is captured through a side stream) and later
runs replay them with one cuGraphLaunch; a driver without the graph entry points, or one that refuses the
capture, gets plain launches every run. The stand-in is helpers/fake_cuda_driver.py's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

import kiln
from kiln import _C
from kiln.compiler._backends import _entries

F = kiln.nn.functional


def transposed_chain(x):
    """Three kernels separated by views: two intermediates in the arena."""
    a = (x * 2.0 + 1.0).sin()
    c = ((a.t() * 3.0).tanh() + 1.0).t()
    return (c * 0.5).exp()


def graph_of(fn, *args):
    compiled = kiln.compile(fn, backend="eager")
    with kiln.no_grad():
        compiled(*args)
    (entry,) = _entries(compiled)
    return entry.program.graph


def test_a_cuda_graph_lays_its_intermediates_out_in_an_arena():
    g = graph_of(transposed_chain, kiln.randn(24, 40))
    cuda = _C._runtime.compile(g, target="cuda", reduce_overhead=True)
    cpu = _C._runtime.compile(g, reduce_overhead=True)
    assert cuda.targets_cuda and cuda.kernel_count == 3
    assert "2 in the arena" in cuda.memory_plan and cuda.arena_bytes == cpu.arena_bytes > 0
    assert cuda.cuda_graph_stats == (True, 0, 0)  # replayable: pointwise kernels and views only
    assert _C._runtime.compile(g, target="cuda").arena_bytes == 0  # the default mode plans no arena
    assert cpu.cuda_graph_stats == (False, 0, 0)


def test_row_kernels_keep_plain_launches():
    g = graph_of(lambda x: (F.softmax(x * 2.0, dim=-1) + 1.0).sin().t().exp(), kiln.randn(6, 50))
    compiled = _C._runtime.compile(g, target="cuda", reduce_overhead=True)
    assert compiled.cuda_graph_stats[0] is False  # a row kernel allocates its own outputs


def test_cpu_inputs_to_a_cuda_graph_run_eagerly_without_the_arena():
    x = kiln.randn(24, 40)
    compiled = _C._runtime.compile(graph_of(transposed_chain, x), target="cuda", reduce_overhead=True)
    for _ in range(2):
        (got,) = compiled.run([x])
        assert kiln.allclose(got, transposed_chain(x))
    assert compiled.cuda_graph_stats == (True, 0, 0)



SCRIPT = r"""
import json, os, sys
import kiln
from kiln import _C
sys.path.insert(0, sys.argv[1])
from test_cuda_reduce_overhead import graph_of, transposed_chain

log = os.environ["FAKE_CUDA_LOG"]
def calls():
    with open(log) as f:
        return [line.strip() for line in f]
compiled = _C._runtime.compile(graph_of(transposed_chain, kiln.randn(24, 40)), target="cuda", reduce_overhead=True)
x = kiln.randn(24, 40).to("cuda")
allocated = lambda: kiln.cuda.memory_stats()["allocation.all.allocated"]
runs = []
result = None
for _ in range(6):
    before, seen = allocated(), len(calls())
    result = compiled.run([x])[0]  # the previous result stays alive meanwhile: two output blocks alternate
    runs.append({"allocations": allocated() - before, "calls": [c for c in calls()[seen:] if c != "mem_alloc"]})
print(json.dumps({"runs": runs, "stats": list(compiled.cuda_graph_stats), "device": str(result.device)}))
"""


def _nvrtc_loads() -> bool:
    try:
        _C._nvrtc_version()
        return True
    except RuntimeError:
        return False


def _run_on_fake_driver(tmp_path, with_graphs: bool, refuse_capture: bool = False) -> dict:
    from fake_cuda_driver import build_fake_cuda  # here: SCRIPT imports this file without the helpers' folder on its path

    driver = build_fake_cuda(tmp_path, "KERNELS_LOAD", *(["WITH_GRAPHS"] if with_graphs else []))
    env = dict(os.environ, KILN_CUDA_DRIVER_LIBRARY=str(driver),
               FAKE_CUDA_LOG=str(tmp_path / "calls.log"), KILN_CUDA_CACHE_DIR=str(tmp_path / "cache"))
    if refuse_capture:
        env["FAKE_CUDA_REFUSE_CAPTURE"] = "1"
    done = subprocess.run([sys.executable, "-c", SCRIPT, os.path.dirname(__file__)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="optional package cc is not installed")
needs_nvrtc = pytest.mark.skipif(not _nvrtc_loads(), reason="optional package nvidia-cuda-nvrtc is not installed")
PLAIN = ["launch default_stream"] * 3


@needs_cc
@needs_nvrtc
def test_replays_capture_once_per_buffer_set_and_then_launch_one_graph(tmp_path):
    out = _run_on_fake_driver(tmp_path, with_graphs=True)
    runs = out["runs"]
    assert out["device"] == "cuda:0"
    # The first run allocates the arena (one block) besides the output; every later run only the output.
    assert [r["allocations"] for r in runs] == [2, 1, 1, 1, 1, 1]
    capture = ["stream_create", "begin_capture", *["launch captured"] * 3, "end_capture", "instantiate",
               "graph_launch default_stream"]
    assert runs[0]["calls"] == PLAIN and runs[1]["calls"] == PLAIN  # two output blocks: two keys, each seen once
    assert runs[2]["calls"] == capture  # the first key's second run: captured on a side stream, replayed
    assert runs[3]["calls"] == capture[1:]  # the side stream is made once
    assert runs[4]["calls"] == runs[5]["calls"] == ["graph_launch default_stream"]
    assert out["stats"] == [True, 2, 4]


@needs_cc
@needs_nvrtc
def test_without_graph_entry_points_every_run_launches_plainly(tmp_path):
    out = _run_on_fake_driver(tmp_path, with_graphs=False)
    assert [r["calls"] for r in out["runs"]] == [PLAIN] * 6
    assert [r["allocations"] for r in out["runs"]] == [2, 1, 1, 1, 1, 1]  # the arena still serves the intermediates
    assert out["stats"] == [True, 0, 0]


@needs_cc
@needs_nvrtc
def test_a_refused_capture_launches_plainly_from_then_on(tmp_path):
    out = _run_on_fake_driver(tmp_path, with_graphs=True, refuse_capture=True)
    runs = [r["calls"] for r in out["runs"]]
    refused = ["begin_capture", *["launch captured"] * 3, "end_capture", *PLAIN]  # nothing ran under the capture
    assert runs[:2] == [PLAIN, PLAIN] and runs[2] == ["stream_create", *refused] and runs[3] == refused
    assert runs[4:] == [PLAIN, PLAIN]
    assert out["stats"] == [True, 0, 0]
