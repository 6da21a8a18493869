"""kiln.utils.benchmark: Timer's call counts and block/stopping rules (fake timer), Measurement
statistics against numpy, repr shape, Compare tables. No timing assertions."""

import re

import numpy as np
import pytest

import kiln
from kiln.utils.benchmark import Compare, Measurement, TaskSpec, Timer


class FakeClock:
    """Advances by `step` seconds per read: a block of n calls costs (reads between) * step."""

    def __init__(self, per_call, overhead=0.0, calls=None):
        self.now = 0.0
        self.per_call = per_call
        self.overhead = overhead
        self.calls = calls

    def __call__(self):
        # Time advances by the stmt calls counted since the last read, plus a fixed read cost.
        done = self.calls[0] - getattr(self, "_seen", 0)
        self._seen = self.calls[0]
        self.now += done * self.per_call + self.overhead
        return self.now


def counting_timer(per_call, overhead=0.0, **kwargs):
    calls = [0]
    clock = FakeClock(per_call, overhead, calls)
    timer = Timer("calls[0] += 1", globals={"calls": calls}, timer=clock, **kwargs)
    return timer, calls


def test_timeit_runs_warmup_then_number():
    timer, calls = counting_timer(1e-6)
    m = timer.timeit(number=1000)
    assert calls[0] == 10 + 1000
    assert m.number_per_run == 1000 and len(m.raw_times) == 1
    timer, calls = counting_timer(1e-6)
    timer.timeit(number=50)
    assert calls[0] == 2 + 50


def test_setup_runs_once_per_block_and_globals_are_copied():
    seen = []
    namespace = {"seen": seen}
    timer = Timer("x.append(1)", setup="x = []; seen.append(x)", globals=namespace)
    timer.timeit(number=7)
    assert [len(x) for x in seen] == [2, 7]
    assert set(namespace) == {"seen"}


def test_blocked_autorange_block_size_and_stop():
    # 1 us per call, 1 ns per timer read: relative overhead <= 1e-4 needs a 10 us block -> 10 calls,
    # and the block must reach 50 us (min_run_time 0.05 / 1000): 100 calls.
    timer, calls = counting_timer(1e-6, overhead=1e-9)
    blocks = []
    m = timer.blocked_autorange(callback=lambda n, t: blocks.append((n, t)), min_run_time=0.01)
    assert m.number_per_run == 100
    assert len(blocks) == len(m.raw_times)
    assert all(n == 100 for n, _ in blocks)
    # Blocks run until their total reaches min_run_time, and no further.
    assert sum(m.raw_times) >= 0.01
    assert sum(m.raw_times[:-1]) < 0.01
    # Estimation: five empty blocks, then 1, 10, 100 calls; then the measured blocks.
    assert calls[0] == 1 + 10 + 100 + 100 * len(m.raw_times)


def test_block_size_stops_growing_once_a_block_exceeds_min_run_time():
    # A huge timer overhead never becomes negligible; a 0.1 s call exceeds the 0.05 s estimate run.
    timer, _ = counting_timer(0.1, overhead=1.0)
    m = timer.blocked_autorange(min_run_time=0.5)
    assert m.number_per_run == 1


def test_adaptive_autorange_stops_when_iqr_small():
    timer, _ = counting_timer(1e-6, overhead=1e-9)
    m = timer.adaptive_autorange(threshold=0.1, min_run_time=0.001)
    # Constant fake times: IQR is 0, so it stops at the first check after min_run_time (>3 blocks).
    assert len(m.raw_times) == max(4, int(np.ceil(0.001 / m.raw_times[0] - 1e-9)))
    assert m.iqr < 1e-12 * m.median + 1e-18


def test_adaptive_autorange_bounded_by_max_run_time():
    calls = [0]
    state = {"reads": 0}

    def noisy():  # alternating block times: IQR / median never below threshold
        state["reads"] += 1
        return state["reads"] * (1.0 if state["reads"] % 4 else 5.0)

    timer = Timer("calls[0] += 1", globals={"calls": calls}, timer=noisy)
    m = timer.adaptive_autorange(threshold=1e-9, min_run_time=0.0, max_run_time=20.0)
    assert sum(m.raw_times) > 20.0
    assert sum(m.raw_times[:-1]) <= 20.0



@pytest.mark.parametrize("num_threads", [1, 2])
def test_num_threads_set_and_restored(num_threads):
    before = kiln.get_num_threads()
    seen = []
    timer = Timer("seen.append(get())", globals={"seen": seen, "get": kiln.get_num_threads}, num_threads=num_threads)
    timer.timeit(number=3)
    timer.blocked_autorange(min_run_time=0.0)
    assert set(seen) == {num_threads}
    assert kiln.get_num_threads() == before


def measurement(raw, number=10, **labels):
    return Measurement(number_per_run=number, raw_times=list(raw), task_spec=TaskSpec(stmt="f(x)", **labels))


def test_measurement_statistics_match_numpy():
    raw = [3e-5, 1e-5, 2e-5, 5e-5, 4e-5, 2.5e-5, 1.5e-5]
    m = measurement(raw)
    per_call = np.array(raw) / 10
    np.testing.assert_allclose(m.times, per_call)
    np.testing.assert_allclose(m.median, np.median(per_call))
    np.testing.assert_allclose(m.mean, np.mean(per_call))
    np.testing.assert_allclose(m.iqr, np.quantile(per_call, 0.75) - np.quantile(per_call, 0.25))


@pytest.mark.parametrize("raw", [
    [3e-5, 1e-5, 2e-5, 5e-5, 4e-5, 2.5e-5, 1.5e-5],
    [1.0000e-3, 1.0001e-3, 0.9999e-3, 1.0e-3] * 4,
    [1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 6e-3, 7e-3, 8e-3],
    [5e-6],
])
def test_measurement_matches_torch(raw):
    from torch.utils.benchmark.utils import common
    ours = measurement(raw, number=3)
    theirs = common.Measurement(number_per_run=3, raw_times=list(raw), task_spec=common.TaskSpec(stmt="f(x)", setup="pass"))
    np.testing.assert_allclose([ours.median, ours.mean, ours.iqr], [theirs.median, theirs.mean, theirs.iqr])
    assert ours.significant_figures == theirs.significant_figures
    assert ours.has_warnings == theirs.has_warnings


def test_significant_figures():
    tight = measurement([1.0000e-3, 1.0001e-3, 0.9999e-3, 1.0e-3] * 4, number=1)
    assert tight.significant_figures == 4
    loose = measurement([1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 6e-3, 7e-3, 8e-3], number=1)
    # std of the middle half 0.5e-3 * sqrt(5)/... -> CI ~0.46e-3 vs median 4.5e-3: one figure.
    assert loose.significant_figures == 1
    assert measurement([5e-6], number=1).significant_figures == 2  # CI floored at 25 ns


def test_has_warnings():
    assert not measurement([1.0, 1.01, 0.99, 1.0]).has_warnings
    assert measurement([1.0, 2.0, 3.0, 4.0]).has_warnings


def test_repr_shape():
    m = measurement([10e-6, 12e-6, 11e-6, 13e-6], number=100, label="add", sub_label="[2, 3]", description="kiln")
    lines = repr(m).splitlines()
    assert re.fullmatch(r"<kiln\.utils\.benchmark\._measurement\.Measurement object at 0x[0-9a-f]+>", lines[0])
    assert lines[1] == "add: [2, 3]"
    assert lines[2] == "  kiln"
    assert lines[3] == "  Median: 115.00 ns"
    assert re.fullmatch(r"  IQR:    \d+\.\d\d ns \(\d+\.\d\d to \d+\.\d\d\)", lines[4])
    assert lines[5] == "  4 measurements, 100 runs per measurement, 1 thread"
    noisy = measurement([1.0, 2.0, 3.0, 4.0], number=1)
    assert "WARNING: Interquartile range is" in repr(noisy)
    assert "  1 measurement, 1 runs per measurement, 1 thread" in repr(measurement([1.0], number=1))


def table_lines(compare):
    return str(compare).splitlines()


def grid():
    results = []
    for sub, base in (("small", 1e-6), ("large", 1e-4)):
        for desc, factor in (("kiln", 1.0), ("torch", 2.0)):
            t = base * factor
            results.append(measurement([t * 10, t * 10.01, t * 9.99, t * 10], label="add", sub_label=sub,
                                       description=desc))
    results.append(measurement([5e-3, 5e-3, 5e-3, 5e-3], number=1, label="mul", sub_label="small",
                               description="kiln"))
    return results


def test_compare_table_layout():
    lines = table_lines(Compare(grid()))
    assert lines[0].startswith("[") and " add " in lines[0] and lines[0].endswith("]")
    header = lines[1].split("|")
    assert [h.strip() for h in header] == ["", "kiln", "torch"]
    assert lines[2].startswith("1 threads: ---")
    small = [c.strip() for c in lines[3].split("|")]
    large = [c.strip() for c in lines[4].split("|")]
    assert small == ["small", "1.0", "2.0"]
    assert large == ["large", "100.0", "200.0"]
    assert "Times are in microseconds (us)." in lines
    # The second label is a table of its own, in its own unit.
    mul = lines.index(next(l for l in lines if " mul " in l))
    assert [c.strip() for c in lines[mul + 3].split("|")] == ["small", "5.0"]
    assert "Times are in milliseconds (ms)." in lines[mul:]
    assert "\033[" not in str(Compare(grid()))


def test_compare_trim_significant_figures():
    # a: 1.23456 ms per call, no spread (4 figures); b: 1..4.4 ms, wide spread (1 figure).
    results = [measurement([1.23456e-2] * 4, label="op", sub_label="a", description="x"),
               measurement([1e-2, 2e-2, 3e-2, 4e-2, 4.4e-2], label="op", sub_label="b", description="x")]
    compare = Compare(results)
    untrimmed = [c.strip() for c in table_lines(compare)[3].split("|")]
    compare.trim_significant_figures()
    trimmed_a = [c.strip() for c in table_lines(compare)[3].split("|")]
    trimmed_b = [c.strip() for c in table_lines(compare)[4].split("|")]
    assert untrimmed == ["a", "1.2"]
    assert float(trimmed_a[1]) == pytest.approx(1.235)
    assert float(trimmed_b[1]) == pytest.approx(3.0)
    assert trimmed_a[1] == "1.235" and trimmed_b[1] == "3.000"


def test_compare_highlight_and_colorize():
    results = [measurement([1e-5, 1e-5, 1e-5, 1e-5], label="op", sub_label="a", description="x"),
               measurement([1e-5, 2e-5, 3e-5, 4e-5], label="op", sub_label="a", description="y")]
    compare = Compare(results)
    compare.highlight_warnings()
    text = str(compare)
    assert "(! " in text and "high variance" in text
    compare.colorize(rowwise=True)
    assert "\033[" in str(compare)
