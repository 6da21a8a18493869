"""The graph passes (passes/, kiln._C._passes) on IR text fixtures: each case
of pass_fixtures/*.ir runs its passes with the verifier after each, then its
result is compared with the expected graph or CHECK lines, and (where the
inputs are tensors of known sizes) the interpreter gives the same outputs
before and after. The fusion passes return plans rather than rewriting the
graph (``_C._passes.plan_passes()``): their text follows the graph's, for the
CHECK lines."""

import pathlib

import numpy as np
import pytest

import kiln
from kiln import _C
from ir_fixtures import filecheck, load_cases

FIXTURES = pathlib.Path(__file__).parent / "pass_fixtures"
CASES = [(path.stem, case) for path in sorted(FIXTURES.glob("*.ir")) for case in load_cases(path)]


PLAN_PASSES = set(_C._passes.plan_passes())


def _run_passes(graph, passes):
    """Runs ``passes`` on ``graph``; returns ({rule: times fired}, the plan passes' text)."""
    fired = {}
    plans = []
    for name in passes:
        if name in PLAN_PASSES:
            plans.append(getattr(_C._passes, name)(graph))
            graph.verify()
            continue
        result = getattr(_C._passes, name)(graph, verify=True) if name == "run_pipeline" else \
            getattr(_C._passes, name)(graph)
        if name == "simplify_algebra":
            for rule, count in result.items():
                fired[rule] = fired.get(rule, 0) + count
        graph.verify()
    return fired, "".join(plans)


_TYPE = {"f32": kiln.float32, "f64": kiln.float64, "f16": kiln.float16, "i64": kiln.int64, "i32": kiln.int32,
         "i8": kiln.int8, "b8": kiln.bool}


def _random_inputs(text):
    """Random tensors for a graph's inputs, or None when an input is not a tensor of known dtype and sizes."""
    header = text.split("\n", 1)[0]
    inputs = []
    g = np.random.default_rng(0)
    for decl in header[len("graph("):header.rindex("):")].split(", %"):
        kind = decl.split(" : ", 1)[1].strip()
        dtype = kind.split("[", 1)[0]
        if dtype not in _TYPE or "[" not in kind:
            return None
        sizes = [s for s in kind.split("[", 1)[1].split("]", 1)[0].split(", ") if s]
        if not all(s.isdigit() for s in sizes):
            return None  # symbolic sizes: no values to run
        sizes = [int(s) for s in sizes]
        values = g.standard_normal(sizes) * 3
        if dtype == "b8":
            inputs.append(kiln.tensor((values > 0).tolist(), dtype=kiln.bool).reshape(sizes))
        else:
            inputs.append(kiln.tensor(values.tolist(), dtype=kiln.float64).reshape(sizes).to(_TYPE[dtype]))
    return inputs




@pytest.mark.parametrize("fixture,case", CASES, ids=[f"{f}:{c.name}" for f, c in CASES])
def test_pass_fixture(fixture, case):
    graph = _C._ir.parse(case.source)
    graph.verify()
    fired, plan = _run_passes(graph, case.passes)
    out = str(graph) + plan
    if case.expect is not None:
        assert str(graph) == str(_C._ir.parse(case.expect)), f"got:\n{out}"
    failure = filecheck(out, case.checks)
    assert failure is None, f"{failure}\ngot:\n{out}"
    if case.fires is not None:
        expected = {}
        for rule in case.fires:
            expected[rule] = expected.get(rule, 0) + 1
        assert fired == expected, f"got:\n{out}"
    inputs = _random_inputs(case.source)
    if inputs is None:
        return
    if any(name in case.source for name in ("bernoulli", "dropout(%x, p=0.5, train=True)")):
        return  # random draws: the values differ by design
    before = _C._ir.run(case.source, [t.clone() for t in inputs])  # clones: a case may write its inputs
    after = _C._ir.run(graph, [t.clone() for t in inputs])
    for b, a in zip(before, after):
        assert b.dtype == a.dtype and b.shape == a.shape
        np.testing.assert_allclose(a.to(kiln.float64).numpy(), b.to(kiln.float64).numpy(), rtol=1e-5, atol=1e-6)


def test_every_rule_and_pass_has_a_fixture():
    fired = {r for _, c in CASES if c.fires for r in c.fires}
    assert {name for name, _, _ in _C._passes.rewrite_rules()} == fired
    passes = {p for _, c in CASES for p in c.passes}
    assert set(_C._passes.pipeline_passes()) <= passes
    assert {path.stem for path in FIXTURES.glob("*.ir")} >= set(_C._passes.pipeline_passes()) | PLAN_PASSES


def test_every_decomposed_op_has_a_fixture():
    sources = "".join(c.source for f, c in CASES if f == "decompose_composites")
    missing = [op for op in _C._passes.decomposed_ops() if f"{op}(" not in sources]
    assert not missing, f"decomposed ops without a decompose_composites.ir case: {missing}"
