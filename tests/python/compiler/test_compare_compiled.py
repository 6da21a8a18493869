"""kiln.utils.benchmark.compare_compiled: eager and kiln.compile side by side. What is
asserted is what cannot drift with the machine's load: which sides run, that outputs
are checked before anything is timed, the kernel counts, and the table's shape."""

from __future__ import annotations

import pytest

import kiln
from kiln.utils.benchmark import CompiledComparison, Measurement, compare_compiled


def chain(x):
    return ((x * 2 + 1).sin().exp().tanh() * 3 - 1).relu()


def test_each_mode_is_a_row_with_its_kernel_count_and_compile_latencies():
    x = kiln.randn(1000)
    with kiln.no_grad():
        result = compare_compiled(chain, x, modes=("eager", "default", "interpreter"), min_run_time=0.01)
    assert isinstance(result, CompiledComparison)
    assert [r.mode for r in result.rows] == ["eager", "default", "interpreter"]
    eager, fused, interpreted = result.rows
    assert all(isinstance(r.measurement, Measurement) and r.measurement.median > 0 for r in result.rows)
    assert eager.speedup == 1.0 and eager.cold_call is None and eager.kernel_count is None
    assert fused.kernel_count == 1  # the whole chain is one fused kernel
    assert interpreted.kernel_count is None  # backend "eager" replays op by op
    for row in (fused, interpreted):
        assert row.cold_call > 0 and row.cached_call > 0
        assert row.speedup == pytest.approx(eager.measurement.median / row.measurement.median)
    assert all(r.peak_bytes >= x.numel() * 4 for r in result.rows)
    lines = str(result).splitlines()
    assert lines[0] == "[ chain ]" and lines[1].split()[0] == "side" and len(lines) == 5


def test_eager_is_always_a_side():
    with kiln.no_grad():
        result = compare_compiled(chain, kiln.randn(10), modes=("default",), min_run_time=0.01)
    assert [r.mode for r in result.rows] == ["eager", "default"]


def test_a_training_step_compares_forward_and_backward_and_leaves_no_grads():
    model = kiln.nn.Sequential(kiln.nn.Linear(16, 16), kiln.nn.GELU(), kiln.nn.Linear(16, 4))
    result = compare_compiled(model, kiln.randn(8, 16), train_step=True, min_run_time=0.01)
    assert result.row("default").kernel_count >= 1  # the joint graph's forward and backward fuse
    assert all(p.grad is None for p in model.parameters())


def test_a_compiled_result_that_differs_from_eager_is_refused_before_timing():
    # A Python side effect runs at capture only (as with torch.compile): the replay keeps
    # the first trace's multiplier while eager's grows, so the outputs differ.
    calls = [0]

    def counted(x):
        calls[0] += 1
        return x * calls[0]

    with pytest.raises(AssertionError, match="compare_compiled: default output 0 differs from eager's"):
        compare_compiled(counted, kiln.ones(4), min_run_time=0.01)


def test_other_sides_are_timed_as_given():
    x = kiln.randn(100)
    with kiln.no_grad():
        result = compare_compiled(chain, x, others={"plain python": (lambda v: v, (x,))}, min_run_time=0.01)
    assert [r.mode for r in result.rows] == ["eager", "default", "plain python"]
    assert result.row("plain python").kernel_count is None


def test_unknown_modes_are_refused():
    with pytest.raises(ValueError, match="unknown mode"):
        compare_compiled(chain, kiln.randn(3), modes=("eager", "max-fused"))
