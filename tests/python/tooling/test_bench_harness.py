"""The benchmark harness's logic (statistics, sample order, reports, case collection).

Only cheap lambdas are timed, with tiny sample targets, and no test asserts a time.
"""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parents[3] / "bench"


sys.path.insert(0, str(BENCH_DIR))  # bench modules import `harness` by name
import harness  # noqa: E402


def _load_run_script():
    spec = importlib.util.spec_from_file_location("bench_run", BENCH_DIR / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run = _load_run_script()

TINY = harness.Settings(repeat=3, target_sample_s=1e-5, warmup_s=0.0)


def _result(name, kiln_samples, torch_samples, group="g"):
    return harness.CaseResult(
        name=name,
        group=group,
        timings={
            "kiln": harness.SideTiming(inner_loops=4, samples_s=kiln_samples),
            "torch": harness.SideTiming(inner_loops=8, samples_s=torch_samples),
        },
    )


def test_median_of_odd_and_even_sample_counts():
    assert harness.SideTiming(1, [3.0, 1.0, 2.0]).median_s == 2.0
    assert harness.SideTiming(1, [4.0, 1.0, 2.0, 3.0]).median_s == 2.5


def test_relative_spread_is_iqr_over_median():
    assert harness.SideTiming(1, [2.0, 2.0, 2.0]).relative_spread == 0.0
    assert harness.SideTiming(1, [1.0]).relative_spread == 0.0
    assert harness.SideTiming(1, [1.0, 2.0, 3.0, 4.0, 5.0]).relative_spread == pytest.approx(2.0 / 3.0)


def test_ratio_is_kiln_median_over_torch_median():
    assert _result("c", [1.0, 2.0, 9.0], [4.0, 4.0, 4.0]).ratio == 0.5
    assert harness.ratio_of_medians(1.0, 0.0) == float("inf")


def test_ratio_is_none_when_a_case_failed():
    failed = harness.CaseResult(name="c", group="g", error="RuntimeError: boom")
    assert failed.ratio is None


def test_sample_order_alternates_which_side_goes_first():
    order = harness.sample_order(4)
    assert order == ["kiln", "torch", "torch", "kiln", "kiln", "torch", "torch", "kiln"]
    assert order.count("kiln") == order.count("torch") == 4


def test_calibration_returns_a_positive_loop_count():
    assert harness.calibrate_inner_loops(lambda: None, (), 1e-5) >= 1


def test_run_case_passes_setup_result_and_collects_samples():
    seen = []
    case = harness.Case(
        "c",
        kiln_fn=lambda state: seen.append(("kiln", state)),
        torch_fn=lambda state: seen.append(("torch", state)),
        setup=lambda: "inputs",
        group="g",
        notes=lambda state: {"state": state},
    )
    result = harness.run_case(case, TINY)
    assert result.error is None
    assert {side for side, _ in seen} == {"kiln", "torch"}
    assert {state for _, state in seen} == {"inputs"}
    assert result.notes == {"state": "inputs"}
    for side in harness.SIDES:
        assert len(result.timings[side].samples_s) == TINY.repeat
        assert result.timings[side].inner_loops >= 1
    assert result.ratio is not None


def test_run_case_without_setup_calls_functions_with_no_arguments():
    result = harness.run_case(harness.Case("c", lambda: 1, lambda: 2), TINY)
    assert result.error is None and result.group == "misc"


def test_run_case_records_an_error_instead_of_raising():
    def broken():
        raise RuntimeError("kiln is not built")

    result = harness.run_case(harness.Case("c", broken, lambda: None), TINY)
    assert result.error == "RuntimeError: kiln is not built"
    assert result.timings == {} and result.ratio is None


def test_format_seconds_picks_a_readable_unit():
    assert harness.format_seconds(812e-9) == "812 ns"
    assert harness.format_seconds(3.414e-6) == "3.41 µs"
    assert harness.format_seconds(0.012) == "12 ms"
    assert harness.format_seconds(1.2) == "1.2 s"
    assert harness.format_seconds(None) == "-"


def _report(results):
    machine = {"cpu_model": "test cpu", "usable_cores": 2, "torch_version": "t", "kiln_version": None}
    return harness.build_report(results, TINY, machine, {"torch": 1, "kiln": None})


def test_markdown_table_has_one_row_per_case():
    failed = harness.CaseResult(name="broken", group="g", error="ImportError: no kiln")
    table = harness.markdown_table(_report([_result("fast", [1e-6] * 3, [2e-6] * 3), failed]))
    lines = table.splitlines()
    assert lines[0] == "| group | case | kiln | torch | kiln/torch | spread |"
    assert lines[2] == "| g | fast | 1 µs | 2 µs | 0.50 | 0% |"
    assert lines[3] == "| g | broken | error: ImportError: no kiln | - | - | - |"


def test_write_report_writes_json_with_every_sample_and_markdown(tmp_path):
    report = _report([_result("c", [1.0, 2.0, 3.0], [2.0, 2.0, 2.0])])
    json_path, md_path = harness.write_report(report, tmp_path / "out")
    saved = json.loads(json_path.read_text())
    case = saved["cases"][0]
    assert case["sides"]["kiln"]["samples_s"] == [1.0, 2.0, 3.0]
    assert case["sides"]["kiln"]["median_s"] == 2.0 and case["sides"]["torch"]["inner_loops"] == 8
    assert case["ratio"] == 1.0 and case["error"] is None
    assert saved["machine"]["cpu_model"] == "test cpu"
    assert saved["settings"]["repeat"] == TINY.repeat
    assert "| g | c |" in md_path.read_text()


def test_machine_info_names_the_libraries():
    info = harness.machine_info()
    assert {"cpu_model", "cpu_count", "usable_cores", "torch_version", "kiln_version"} <= set(info)


def test_set_thread_counts_sets_torch_threads():
    import torch

    before = torch.get_num_threads()
    try:
        assert harness.set_thread_counts(1)["torch"] == 1
    finally:
        torch.set_num_threads(before)


def test_collect_cases_loads_cases_modules_and_filters(tmp_path):
    (tmp_path / "cases_a.py").write_text(
        "from harness import Case\n"
        "def cases():\n"
        "    return [Case('one', None, None, group='x'), Case('two', None, None, group='y')]\n"
    )
    (tmp_path / "not_cases.py").write_text("raise AssertionError('must not be imported')\n")
    modules = run.load_case_modules(tmp_path)
    assert [case.name for case in run.collect_cases(modules)] == ["one", "two"]
    assert [case.name for case in run.collect_cases(modules, "y/")] == ["two"]


def test_core_cases_import_without_kiln():
    modules = run.load_case_modules()
    assert any(case.group == "allocator" for case in run.collect_cases(modules))


def test_parse_args_accepts_the_documented_options():
    args = run.parse_args(["--filter", "creation", "--repeat", "5", "--out", "/tmp/x", "--quick"])
    assert (args.filter, args.repeat, str(args.out), args.quick) == ("creation", 5, "/tmp/x", True)


def test_add_rates_gives_each_side_gflops_and_fraction_of_peak():
    timings = {"kiln": harness.SideTiming(inner_loops=1, samples_s=[0.5, 1.0, 2.0]),
               "torch": harness.SideTiming(inner_loops=1, samples_s=[2.0, 2.0, 2.0])}
    notes = harness.add_rates({"flops": 4e9, "fp32_peak_gflops": 8.0}, timings)
    assert notes["kiln_gflops"] == 4.0 and notes["torch_gflops"] == 2.0
    assert notes["kiln_fraction_of_peak"] == 0.5 and notes["torch_fraction_of_peak"] == 0.25
    # at the best sample: 4 GFLOP in 0.5 s is 8 GFLOP/s, all of the peak
    assert notes["kiln_best_fraction_of_peak"] == 1.0 and notes["torch_best_fraction_of_peak"] == 0.25


def test_add_rates_leaves_notes_without_flops_alone():
    timings = {"kiln": harness.SideTiming(inner_loops=1, samples_s=[1.0])}
    assert harness.add_rates({"shape": [2, 3]}, timings) == {"shape": [2, 3]}
    assert "kiln_fraction_of_peak" not in harness.add_rates({"flops": 1e9}, timings)


def test_fp32_peak_probe_sums_threads_and_rejects_zero():
    import kiln  # the suite runs on a built kiln: a missing one fails here, it does not skip

    assert kiln._C._fp32_peak_gflops(0.01, 2) > 0
    with pytest.raises(RuntimeError, match="threads must be at least 1, got 0"):
        kiln._C._fp32_peak_gflops(0.01, 0)
