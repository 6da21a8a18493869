"""The pass pipeline (kiln._C._passes.run_pipeline) on graphs captured from
real functions: the verifier passes after every pass, and the interpreter gives
the same outputs (values, dtypes, shapes) before and after; KILN_LOGS=passes
logs the graph after each pass."""

import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import kiln
import kiln.nn.functional as F
from kiln import _C, _logging


def capture(fn, *args):
    """The graph fn records on args (declared inputs first, then the lifted parameters) and its inputs."""
    session = _C._capture.Session()
    for a in args:
        session.add_input(a)
    with kiln.no_grad(), session:
        out = fn(*args)
    for t in out if isinstance(out, tuple) else (out,):
        session.mark_output(t)
    assert not session.broken, session.break_reason
    inputs = list(session.input_tensors)
    return session.take_graph(), inputs


kiln.manual_seed(0)
_ln = kiln.nn.LayerNorm(16)
_qkv = kiln.nn.Linear(16, 48)
_proj = kiln.nn.Linear(16, 16)
_fc = kiln.nn.Linear(16, 64)
_out = kiln.nn.Linear(64, 16)
_mlp = kiln.nn.Sequential(kiln.nn.Linear(16, 32), kiln.nn.GELU(), kiln.nn.Dropout(0.2), kiln.nn.Linear(32, 16),
                          kiln.nn.SiLU())
_mlp.eval()


def attention_block(x):
    B, T, C = x.shape
    h = _ln(x)
    q, k, v = _qkv(h).split(C, dim=-1)
    q = q.view(B, T, 2, C // 2).transpose(1, 2)
    k = k.view(B, T, 2, C // 2).transpose(1, 2)
    v = v.view(B, T, 2, C // 2).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / (C // 2) ** 0.5)
    mask = kiln.ones(T, T).tril() == 0
    att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
    y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
    x = x + _proj(y)
    return x + _out(F.gelu(_fc(_ln(x)), approximate="tanh"))


def mlp(x):
    return _mlp(x) * 1 + 0


def norms_and_casts(x):
    a = F.rms_norm(x, [16], eps=None)
    b = F.layer_norm(x.double(), [16]).float()
    c = x.float().double().float().t().t()
    return F.log_softmax(a + b, dim=-1) - c.neg().neg(), F.dropout(c, 0.5, training=False)


def in_place_updates(x):
    y = x * 1
    y.mul_(2)  # capture records writes to fresh tensors out of place
    z = x.exp()
    z.add_(1)
    w = x.exp()
    x[0].mul_(0.5)  # a write through a view of an input stays in place
    v = x.exp()
    return y + z - w + v, F.silu(y)


def shapes_and_views(x):
    flat = x.reshape(-1).reshape(4, -1).view(x.shape)
    p = x.permute(2, 0, 1).permute(1, 2, 0)
    return flat.unsqueeze(0).squeeze(0) + p.contiguous(), x.sum(dim=-1, keepdim=True).expand(2, 3, 16)


FUNCTIONS = [
    (attention_block, [(2, 5, 16)]),
    (mlp, [(7, 16)]),
    (norms_and_casts, [(6, 16)]),
    (in_place_updates, [(3, 16)]),
    (shapes_and_views, [(2, 3, 16)]),
]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("fn,shapes", FUNCTIONS, ids=[f.__name__ for f, _ in FUNCTIONS])
def test_pipeline_keeps_outputs(fn, shapes, seed):
    kiln.manual_seed(seed)
    args = [kiln.randn(*s) * 2 for s in shapes]
    graph, inputs = capture(fn, *args)
    text = str(graph)
    before = _C._ir.run(graph, [t.clone() for t in inputs])
    _C._passes.run_pipeline(graph, verify=True)
    assert str(_C._ir.parse(str(graph))) == str(graph)  # the result still round-trips
    after = _C._ir.run(graph, [t.clone() for t in inputs])
    assert len(before) == len(after)
    for b, a in zip(before, after):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), f"before:\n{text}\nafter:\n{graph}"
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=f"after:\n{graph}")


def test_pipeline_decomposes_and_simplifies_a_block():
    graph, _ = capture(attention_block, kiln.randn(2, 5, 16))
    _C._passes.run_pipeline(graph, verify=True)
    kinds = set(graph.node_kinds)
    assert not kinds & set(_C._passes.decomposed_ops())
    assert {"kiln::amax", "kiln::exp", "kiln::rsqrt", "kiln::tanh"} <= kinds


def test_pipeline_on_an_in_place_graph_keeps_the_writes():
    graph, _ = capture(in_place_updates, kiln.randn(3, 16))
    _C._passes.run_pipeline(graph, verify=True)
    kinds = graph.node_kinds
    assert "kiln::mul_.Scalar" in kinds
    assert kinds.count("kiln::exp") == 3  # x is written, so no read of it merges with another


def test_passes_log_names_each_pass(caplog):
    graph, _ = capture(mlp, kiln.randn(2, 16))
    _logging.set_logs(passes=True)
    try:
        with caplog.at_level(logging.INFO, logger="kiln.compile"):
            _C._passes.run_pipeline(graph)
    finally:
        _logging.set_logs()
    messages = [r.getMessage() for r in caplog.records if r.name == "kiln.compile.passes"]
    assert [m.split(" (", 1)[0] for m in messages] == [f"after {p}" for p in _C._passes.pipeline_passes()]
    assert messages[-1].endswith(str(graph).rstrip())


def test_passes_log_is_off_by_default(caplog):
    graph, _ = capture(mlp, kiln.randn(2, 16))
    with caplog.at_level(logging.INFO, logger="kiln.compile"):
        _C._passes.run_pipeline(graph)
    assert not [r for r in caplog.records if r.name == "kiln.compile.passes"]


def test_verify_failure_names_where_the_pipeline_stood():
    graph = _C._ir.parse("graph(%x : f32[2]{1}):\n  %y : f32[2]{1} = kiln::relu(%x, %x)\n  return (%y)\n")
    with pytest.raises(RuntimeError, match=r"passes: the input graph: ir verify: kiln::relu"):
        _C._passes.run_pipeline(graph, verify=True)


def test_kiln_logs_passes_environment_variable():
    code = ("from kiln import _C\n"
            "g = _C._ir.parse('graph(%x : f32[2]{1}):\\n  %y : f32[2]{1} = kiln::silu(%x)\\n  return (%y)\\n')\n"
            "_C._passes.run_pipeline(g)\n")
    env = dict(os.environ, KILN_LOGS="passes")
    err = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stderr
    assert "[kiln.compile.passes] after decompose_composites (1 changes):\ngraph(%x : f32[2]{1}):" in err
    assert "kiln::sigmoid(%x)" in err and "[kiln.compile.passes] after eliminate_dead_code" in err
