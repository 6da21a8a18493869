"""tests/gpu/run.sh and its benchmark script cannot run without a GPU; here they are at least
syntactically checked (bash -n, Python compile), and the benchmark script writes its JSON with
the reason when there is no GPU."""

import json
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kiln

ROOT = Path(__file__).resolve().parents[3]
GPU = ROOT / "tests" / "gpu"


@pytest.mark.skipif(shutil.which("bash") is None, reason="optional package bash is not installed")
@pytest.mark.parametrize("script", ["tests/gpu/run.sh", "scripts/gpu_check.sh"])
def test_gpu_shell_scripts_parse(script):
    done = subprocess.run(["bash", "-n", str(ROOT / script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_gpu_python_scripts_compile(tmp_path):
    scripts = sorted(GPU.glob("*.py"))
    assert [p.name for p in scripts] == ["cuda_bench.py"]
    for p in scripts:
        py_compile.compile(str(p), cfile=str(tmp_path / (p.name + "c")), doraise=True)


def test_gpu_check_wrapper_runs_tests_gpu_run():
    assert "tests/gpu/run.sh" in (ROOT / "scripts" / "gpu_check.sh").read_text()


@pytest.mark.skipif(kiln.cuda.is_available(),
                    reason="no GPU answer to check here: on a GPU tests/gpu/run.sh runs the benchmarks")
def test_bench_writes_the_reason_without_a_gpu(tmp_path):
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, str(GPU / "cuda_bench.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["cuda_available"] is False and "no GPU" in result["error"]
