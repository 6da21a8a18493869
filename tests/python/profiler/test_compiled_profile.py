"""Compiled graphs, fused kernels and JIT compiles in kiln.profiler's events and trace, and
kiln.compiler.kernel_summary (issue 26 items 2 and 4)."""

from __future__ import annotations

import json

import kiln
import kiln.profiler as kprof
from kiln.compiler._backends import compiled_graphs


def _chain(a, b):
    return ((a * b + 1.0).relu() * 2.0).sum(), (a - b).exp()


def _events_by_category(prof, category):
    return [e for e in prof.events() if e.category == category]


def test_fused_kernels_appear_under_their_compiled_graph(tmp_path):
    f = kiln.compile(lambda a, b: _chain(a, b))
    a, b = kiln.randn(64, 32), kiln.randn(64, 32)
    with kprof.profile() as prof:
        f(a, b)  # captures (running eagerly) and compiles
        f(a, b)  # runs the compiled graph
        f(a, b)
    (graph,) = compiled_graphs(f)
    jit = [e for e in prof.events() if e.name == "kiln::jit_compile"]
    assert len(jit) == 1 and jit[0].args["kernels"] == graph.kernel_count
    capture = jit[0].cpu_parent
    while capture.cpu_parent is not None:
        capture = capture.cpu_parent
    assert capture.name.startswith("kiln.compile: capture ") and capture.category == "compile"
    runs = [e for e in prof.events() if e.name == "kiln::CompiledGraph"]
    assert len(runs) == 2 and runs[0].category == "compiled_graph"
    kernels = _events_by_category(prof, "fused_kernel")
    assert len(kernels) == 2 * graph.kernel_count
    assert all(k.cpu_parent is runs[0] or k.cpu_parent is runs[1] for k in kernels)
    names = sorted({k.name for k in kernels})
    assert names == ["cpp_fused_mul_add_relu_mul_0", "cpp_fused_sub_exp_1"]
    first = next(k for k in kernels if k.name == names[0])
    assert first.args["ops"] == "kiln::mul.Tensor, kiln::add.Scalar, kiln::relu, kiln::mul.Scalar"
    assert first.args["bytes moved"] == 3 * 64 * 32 * 4  # two float inputs read, one output written
    assert first.args["numel"] == 64 * 32
    # The ops left to eager kernels (the sum) run inside the graph too.
    assert [c.name for c in runs[1].cpu_children if c.category == "cpu_op"] == ["kiln::sum"]
    assert [c.name for c in runs[0].cpu_children if c.category == "fused_kernel"] == names

    path = tmp_path / "compiled.json"
    prof.export_chrome_trace(str(path))
    trace = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("cat") == "fused_kernel"]
    assert len(trace) == len(kernels)
    assert trace[0]["args"]["bytes moved"] > 0 and trace[0]["args"]["achieved GB/s"] > 0
    assert 0 < trace[0]["args"]["fraction of copy bandwidth"]


def test_kernel_cache_hits_are_recorded():
    a, b = kiln.randn(16), kiln.randn(16)
    kiln.compile(lambda x, y: (x * y).exp())(a, b)  # compiles the kernel
    with kprof.profile() as prof:
        kiln.compile(lambda x, y: (x * y).exp())(a, b)  # another function, the same kernel
    jit = next(e for e in prof.events() if e.name == "kiln::jit_compile")
    assert jit.args["cache hits"] == 1 and jit.args["compiled"] == 0
    hits = [e for e in prof.events() if e.name == "kiln::kernel_cache_hit"]
    assert len(hits) == 1 and hits[0].is_instant and hits[0].cpu_parent is jit


def test_kernel_summary_lists_each_fused_kernel():
    a, b = kiln.randn(128, 64), kiln.randn(128, 64)
    summary = kiln.compiler.kernel_summary(_chain, a, b, repeat=3)
    assert summary.graph_count == 1
    assert summary.eager_ops == [["kiln::sum"]]
    assert [k.name for k in summary.kernels] == ["cpp_fused_mul_add_relu_mul_0", "cpp_fused_sub_exp_1"]
    chain, sub_exp = summary.kernels
    assert chain.ops == ["kiln::mul.Tensor", "kiln::add.Scalar", "kiln::relu", "kiln::mul.Scalar"]
    assert sub_exp.ops == ["kiln::sub.Tensor", "kiln::exp"]
    for k in summary.kernels:
        assert k.calls == 3 and k.numel == 128 * 64 and k.bytes_moved == 3 * 128 * 64 * 4
        assert k.time_us > 0 and k.achieved_gbps > 0
        assert k.fraction_of_copy_bandwidth == k.achieved_gbps / summary.copy_bandwidth_gbps
    text = str(summary)
    assert "cpp_fused_sub_exp_1" in text and "kiln::sub.Tensor, kiln::exp" in text
    # explain's calling form works too, and a compiled function is summarised as it is.
    compiled = kiln.compile(_chain)
    assert len(kiln.compiler.kernel_summary(compiled)(a, b).kernels) == 2
    assert not kiln._C._profiler.is_active()


def test_compare_compiled_carries_the_kernel_summary():
    from kiln.utils.benchmark import compare_compiled

    a, b = kiln.randn(32, 16), kiln.randn(32, 16)
    result = compare_compiled(_chain, a, b, min_run_time=0.01)
    assert result.row("eager").kernels is None
    summary = result.row("default").kernels
    assert [k.name for k in summary.kernels] == ["cpp_fused_mul_add_relu_mul_0", "cpp_fused_sub_exp_1"]
    assert all(k.calls == 3 and k.bytes_moved == 3 * 32 * 16 * 4 for k in summary.kernels)
