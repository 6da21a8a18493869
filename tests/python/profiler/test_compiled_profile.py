"""Compiled graphs, fused kernels and JIT compiles in kiln.profiler's events and trace, and
kiln.compiler.kernel_summary (issue 26 items 2 and 4). Expectations about which kernels exist come from the
compiled graph itself (kernel_ops), so the fuser may group differently without breaking these tests."""

from __future__ import annotations

import json

import kiln
import kiln.profiler as kprof
from kiln.compiler._backends import compiled_graphs


def _chain(a, b):
    """Pointwise chains (fused kernels) and a matmul (an eager step). No reduction: whether those fuse is the
    fuser's business, not the profiler's."""
    return (a * b + 1.0).relu() * 2.0, (a - b).exp().t().mm(a)


def _one_kernel(a, b):
    """One fused kernel: reads a and b, writes one output."""
    return (a * b + 1.0).relu()


def _kernel_name(ops: list, index: int) -> str:
    """The profiler's name of a fused kernel (runtime/CompiledGraph.cpp's kernel_event_name)."""
    return "cpp_fused_" + "_".join(op.split("::")[-1].split(".")[0] for op in ops) + f"_{index}"


def test_fused_kernels_appear_under_their_compiled_graph(tmp_path):
    f = kiln.compile(lambda a, b: _chain(a, b))
    a, b = kiln.randn(64, 32), kiln.randn(64, 32)
    with kprof.profile() as prof:
        f(a, b)  # captures (running eagerly) and compiles
        f(a, b)  # runs the compiled graph
        f(a, b)
    (graph,) = compiled_graphs(f)
    assert graph.kernel_count >= 1
    jit = [e for e in prof.events() if e.name == "kiln::jit_compile"]
    assert len(jit) == 1 and jit[0].args["kernels"] == graph.kernel_count
    capture = jit[0].cpu_parent
    while capture.cpu_parent is not None:
        capture = capture.cpu_parent
    assert capture.name.startswith("kiln.compile: capture ") and capture.category == "compile"
    runs = [e for e in prof.events() if e.name == "kiln::CompiledGraph"]
    assert len(runs) == 2 and runs[0].category == "compiled_graph"
    kernels = [e for e in prof.events() if e.category == "fused_kernel"]
    assert len(kernels) == 2 * graph.kernel_count
    assert all(k.cpu_parent is runs[0] or k.cpu_parent is runs[1] for k in kernels)
    expected = [_kernel_name(ops, i) for i, ops in enumerate(graph.kernel_ops)]
    assert [c.name for c in runs[0].cpu_children if c.category == "fused_kernel"] == expected
    for k in kernels:
        ops = graph.kernel_ops[expected.index(k.name)]
        assert k.args["ops"] == ", ".join(ops)
        assert k.args["numel"] == 64 * 32 and k.args["bytes moved"] > 0
    # The ops left to eager kernels (the matmul) run inside the graph too.
    assert "kiln::mm" in [c.name for c in runs[1].cpu_children if c.category == "cpu_op"]

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
    assert jit.args["kernels"] == 1 and jit.args["cache hits"] == 1
    assert [c.name for c in jit.cpu_children] == ["kiln::kernel_cache_hit"]
    assert jit.cpu_children[0].is_instant


def test_each_kernel_compiled_or_loaded_is_recorded():
    a = kiln.randn(8)
    with kprof.profile() as prof:
        kiln.compile(lambda x: ((x * 3.0 - 1.5).tanh() + 0.25).abs())(a)  # a kernel no other test makes
    jit = next(e for e in prof.events() if e.name == "kiln::jit_compile")
    (child,) = jit.cpu_children
    # Compiled (kiln::llvm_compile, naming the kernel) or, if an earlier process cached it, loaded from disk.
    assert child.name in ("kiln::llvm_compile", "kiln::kernel_disk_cache_hit")
    if child.name == "kiln::llvm_compile":
        assert child.args["kernel"].startswith("kernel_") and child.cpu_time_total > 0


def test_kernel_summary_of_one_kernel():
    a, b = kiln.randn(128, 64), kiln.randn(128, 64)
    summary = kiln.compiler.kernel_summary(_one_kernel, a, b, repeat=3)
    assert summary.graph_count == 1 and summary.eager_ops == [[]]
    (k,) = summary.kernels
    assert k.name == "cpp_fused_mul_add_relu_0"
    assert k.ops == ["kiln::mul.Tensor", "kiln::add.Scalar", "kiln::relu"]
    assert k.calls == 3 and k.numel == 128 * 64 and k.bytes_moved == 3 * 128 * 64 * 4  # a, b read; one write
    assert k.time_us > 0 and k.achieved_gbps > 0
    assert k.fraction_of_copy_bandwidth == k.achieved_gbps / summary.copy_bandwidth_gbps
    text = str(summary)
    assert "cpp_fused_mul_add_relu_0" in text and "kiln::mul.Tensor, kiln::add.Scalar, kiln::relu" in text


def test_kernel_summary_of_a_compiled_function():
    a, b = kiln.randn(64, 32), kiln.randn(64, 32)
    compiled = kiln.compile(_chain)
    summary = kiln.compiler.kernel_summary(compiled)(a, b)  # explain's calling form
    (graph,) = compiled_graphs(compiled)
    assert [k.ops for k in summary.kernels] == graph.kernel_ops
    assert "kiln::mm" in summary.eager_ops[0]
    assert not kiln._C._profiler.is_active()


def test_compare_compiled_carries_the_kernel_summary():
    from kiln.utils.benchmark import compare_compiled

    a, b = kiln.randn(32, 16), kiln.randn(32, 16)
    result = compare_compiled(_one_kernel, a, b, min_run_time=0.01)
    assert result.row("eager").kernels is None
    (k,) = result.row("default").kernels.kernels
    assert k.name == "cpp_fused_mul_add_relu_0" and k.calls == 3 and k.bytes_moved == 3 * 32 * 16 * 4
