"""python -m kiln.bench (issue 26): the --quick run writes report.md, report.json and PNGs that
open as images, the JSON has every workload and column; a column that errors or breaks the
graph is a cell of the report, not a crash. No timing assertions."""

import json
import struct
import subprocess
import sys
import zlib

import pytest

import kiln
from kiln.bench import WORKLOADS, _columns, _report_json, _report_markdown
from kiln.bench._runner import RunOptions, run_workload
from kiln.bench._workloads import Step, Workload

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path) -> tuple:
    """(width, height) from the PNG signature and the IHDR chunk (with its CRC), without PIL."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path.name} is not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    body = data[16:29]
    (crc,) = struct.unpack(">I", data[29:33])
    assert zlib.crc32(kind + body) == crc, f"{path.name}: IHDR CRC mismatch"
    return struct.unpack(">II", body[:8])


def open_image(path) -> tuple:
    try:
        from PIL import Image
    except ImportError:
        return png_size(path)
    with Image.open(path) as image:
        image.load()  # decodes every pixel: a truncated file raises here
        return image.size


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    pytest.importorskip("matplotlib", reason="optional package matplotlib is not installed")
    out = tmp_path_factory.mktemp("kiln-bench")
    run = subprocess.run([sys.executable, "-m", "kiln.bench", "--quick", "--reps", "3", "--no-progress",
                          "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    return out, run.stdout


def test_quick_run_writes_the_three_kinds_of_file(quick_report):
    out, stdout = quick_report
    for name in ("report.md", "report.json", "time_per_call.png", "compile_latency.png", "gpt_mini_loss.png"):
        assert (out / name).is_file(), name
        assert str(out / name) in stdout, f"the run does not say where it wrote {name}"
    markdown = (out / "report.md").read_text()
    assert "| workload | shape | kiln eager | kiln compiled | torch eager | torch.compile |" in markdown
    assert "| workload | shape | kiln eager |" in stdout  # the table is printed too


def test_json_has_every_workload_and_column(quick_report):
    out, _ = quick_report
    report = json.loads((out / "report.json").read_text())
    assert list(report["workloads"]) == [w.name for w in WORKLOADS]
    assert [c["key"] for c in report["columns"]] == ["kiln_eager", "kiln_compiled", "torch_eager", "torch_compile"]
    for name, workload in report["workloads"].items():
        assert set(workload["cells"]) == {c["key"] for c in report["columns"]}, name
        eager = workload["cells"]["kiln_eager"]
        assert eager["status"] == "ok" and eager["median_s"] > 0 and len(eager["samples_s"]) == 3, name
        for key, cell in workload["cells"].items():
            assert cell["status"] in ("ok", "graph_break", "mismatch", "error", "skipped", "unavailable"), (name, key)
            assert (cell["median_s"] is not None) == (cell["status"] in ("ok", "graph_break")), (name, key, cell)
            if cell["status"] != "ok":
                assert cell["note"], (name, key)
    assert report["quick"] is True and report["threads"] == 1


def test_gpt_mini_losses_line_up(quick_report):
    out, _ = quick_report
    cells = json.loads((out / "report.json").read_text())["workloads"]["gpt_mini_train_step"]["cells"]
    eager, compiled = cells["kiln_eager"]["losses"], cells["kiln_compiled"]["losses"]
    assert len(eager) == len(compiled) >= 40
    assert eager[-1] < eager[0]  # it learns
    assert max(abs(a - b) for a, b in zip(eager, compiled)) < 1e-3


def test_pngs_open_as_images(quick_report):
    out, _ = quick_report
    for name in ("time_per_call.png", "compile_latency.png", "gpt_mini_loss.png"):
        width, height = open_image(out / name)
        assert width > 200 and height > 200, (name, width, height)
        assert png_size(out / name) == (width, height)


def _kiln_only(workload, quick=True):
    skipped = {"torch_eager": ("skipped", "kiln-only test"), "torch_compile": ("skipped", "kiln-only test")}
    libraries = {"kiln": kiln, "torch": None}
    options = RunOptions(quick=quick, reps=2, block_seconds=0.0, threads=1)
    return run_workload(workload, _columns.COLUMNS, libraries, skipped, options)


def _report(result):
    return _report_json.Report(_columns.COLUMNS, [result], 1, True, 2, {"kiln": kiln.__version__}, "now")


def test_a_graph_break_is_timed_and_said_in_its_cell():
    def escapes(x):
        return x * float(x.sum())  # float() of a tensor: a graph break

    def build(lib, compile_fn, quick):
        x = lib.ones(8)
        fn = escapes if compile_fn is None else compile_fn(escapes)
        return Step(lambda: fn(x), fn)

    result = _kiln_only(Workload("escape", "a value escaping to Python", lambda q: "[8]", build))
    cell = result.cells["kiln_compiled"]
    assert cell.status == "graph_break" and cell.measurement is not None
    assert "graph break" in cell.note
    table = _report_markdown.time_table(_report(result))
    assert "graph break [" in table
    assert _report_json.as_dict(_report(result))["workloads"]["escape"]["cells"]["kiln_compiled"]["status"] == \
        "graph_break"


def test_a_failing_column_is_an_error_cell_not_a_crash():
    def build(lib, compile_fn, quick):
        if compile_fn is not None:
            raise RuntimeError("this backend cannot compile it")
        x = lib.ones(8)
        return Step(lambda: x + 1)

    result = _kiln_only(Workload("broken", "fails to compile", lambda q: "[8]", build))
    assert result.cells["kiln_eager"].status == "ok"
    cell = result.cells["kiln_compiled"]
    assert cell.status == "error" and cell.measurement is None
    assert cell.note == "RuntimeError: this backend cannot compile it"
    report = _report(result)
    assert "| broken | [8] | " in _report_markdown.time_table(report)
    assert "this backend cannot compile it" in _report_markdown.notes_text(report)


def test_a_wrong_compiled_result_is_not_timed():
    def build(lib, compile_fn, quick):
        x = lib.ones(8)
        return Step(lambda: x + (1 if compile_fn is None else 2))

    cell = _kiln_only(Workload("wrong", "disagrees", lambda q: "[8]", build)).cells["kiln_compiled"]
    assert cell.status == "mismatch" and cell.measurement is None
    assert cell.max_abs_diff == pytest.approx(1.0)


def test_unknown_workload_names_the_known_ones():
    run = subprocess.run([sys.executable, "-m", "kiln.bench", "--workloads", "nonesuch", "--no-progress"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert "no workload matches ['nonesuch']" in run.stderr and "gpt_mini_train_step" in run.stderr


def test_importing_kiln_bench_imports_neither_torch_nor_matplotlib():
    code = ("import sys, kiln.bench; "
            "print(sorted(m for m in ('torch', 'matplotlib', 'tqdm') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
