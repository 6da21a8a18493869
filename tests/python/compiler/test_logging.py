"""KILN_LOGS / kiln._logging.set_logs: the graph, guards, recompiles and breaks
artifacts of kiln.compile, printed to stderr through Python logging."""

import logging
import os
import subprocess
import sys
import warnings

import pytest

import kiln
from kiln import _logging


@pytest.fixture
def logs_off_after():
    yield
    _logging.set_logs()


def _compile_and_run():
    f = kiln.compile(lambda x, s: x * s + 1, backend="eager")
    f(kiln.ones(2), 2.0)
    f(kiln.ones(2), 2.0)  # cached: nothing logged
    f(kiln.ones(3), 2.0)  # recompile: sizes
    g = kiln.compile(lambda x: x.sum().item(), backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g(kiln.ones(2))


def test_set_logs_records_each_artifact(caplog, logs_off_after):
    _logging.set_logs(graph=True, guards=True, recompiles=True, breaks=True)
    with caplog.at_level(logging.INFO, logger="kiln.compile"):
        _compile_and_run()
    by_artifact = {}
    for r in caplog.records:
        by_artifact.setdefault(r.name.rsplit(".", 1)[1], []).append(r.getMessage())
    assert len(by_artifact["graph"]) == 2 and "kiln::mul.Scalar" in by_artifact["graph"][0]
    assert len(by_artifact["guards"]) == 2 and "tensor argument 0 sizes: kiln.Size([2])" in by_artifact["guards"][0]
    [recompile] = by_artifact["recompiles"]
    assert recompile.startswith("recompiling ")
    assert recompile.endswith("<lambda>: failing guard: tensor argument 0 sizes")
    assert len(by_artifact["breaks"]) == 1 and "Tensor.item()" in by_artifact["breaks"][0]


def test_only_the_chosen_artifacts_print_to_stderr(capfd, logs_off_after):
    _logging.set_logs(recompiles=True)
    _compile_and_run()
    err = capfd.readouterr().err
    assert "[kiln.compile.recompiles] recompiling " in err
    assert "<lambda>: failing guard: tensor argument 0 sizes" in err
    assert "kiln.compile.graph" not in err and "kiln.compile.guards" not in err and "kiln.compile.breaks" not in err
    _logging.set_logs()
    _compile_and_run()
    assert "kiln.compile." not in capfd.readouterr().err


def test_kiln_logs_environment_variable():
    code = ("import kiln\n"
            "f = kiln.compile(lambda x: x + 1)\n"
            "f(kiln.ones(2)); f(kiln.ones(3))\n")
    env = dict(os.environ, KILN_LOGS="graph,recompiles,graph_breaks")
    err = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stderr
    assert "[kiln.compile.graph] captured graph of <lambda>:" in err and "kiln::add" in err
    assert "[kiln.compile.recompiles] recompiling <lambda>: failing guard: tensor argument 0 sizes" in err
    assert "kiln.compile.guards" not in err
    assert _logging.parse("all") == dict.fromkeys(_logging.ARTIFACTS, True)
    with pytest.raises(ValueError, match="unknown artifact"):
        _logging.parse("graph,nonsense")
