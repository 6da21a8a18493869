"""The pass pipeline on random programs: chains of pointwise ops, composites
(gelu, silu, softmax, log_softmax, layer_norm, rms_norm, eval dropout), views,
casts, in-place writes and the patterns the rewrite rules match (x * 1,
x.t().t(), -(-x), a float64 round trip, ...), captured and run through the
interpreter before and after run_pipeline(verify=True). A failure prints the
program and the graphs. KILN_LONG_TESTS=1 runs 500 programs instead of 40."""

import os
import random

import numpy as np
import pytest

import kiln
import kiln.nn.functional as F
from kiln import _C

NUM_PROGRAMS = 500 if os.environ.get("KILN_LONG_TESTS") == "1" else 40
SHAPE = (4, 6)

UNARY = {
    "sin": lambda x: x.sin(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "relu": lambda x: x.relu(),
    "neg_neg": lambda x: x.neg().neg(),
    "mul_one": lambda x: x * 1,
    "div_one": lambda x: x / 1,
    "sub_zero": lambda x: x - 0,
    "pow_one": lambda x: x ** 1,
    "gelu": lambda x: F.gelu(x),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": lambda x: F.silu(x),
    "softmax0": lambda x: F.softmax(x, dim=0),
    "softmax1": lambda x: F.softmax(x, dim=-1),
    "log_softmax": lambda x: F.log_softmax(x, dim=1),
    "layer_norm": lambda x: F.layer_norm(x, [6]),
    "rms_norm": lambda x: F.rms_norm(x, [6], eps=1e-6),
    "dropout_eval": lambda x: F.dropout(x, 0.5, training=False),
    "t_t": lambda x: x.t().t(),
    "transpose_back": lambda x: x.transpose(0, 1).transpose(1, 0),
    "permute_back": lambda x: x.permute(1, 0).permute(1, 0),
    "reshape_back": lambda x: x.reshape(-1).reshape(4, 6),
    "view_back": lambda x: x.view(2, 12).view(24).view(4, 6),
    "unsqueeze_squeeze": lambda x: x.unsqueeze(1).squeeze(1),
    "f64_round_trip": lambda x: x.double().float(),
    "to_own_dtype": lambda x: x.to(kiln.float32),
    "contiguous": lambda x: x.contiguous(),
    "transposed_contiguous": lambda x: x.t().contiguous().t(),
    "in_place_copy": lambda x: (x * 1).mul_(0.5),
    "in_place_add": lambda x: x.sin().add_(1),
}
BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
}


def make_program(seed):
    """A list of (name, argument indices); value 0 and 1 are the inputs."""
    rng = random.Random(seed)
    program, live = [], 2
    for _ in range(rng.randint(4, 12)):
        if rng.random() < 0.3:
            name = rng.choice(sorted(BINARY))
            program.append((name, (rng.randrange(live), rng.randrange(live))))
        else:
            name = rng.choice(sorted(UNARY))
            program.append((name, (rng.randrange(live),)))
        live += 1
    outputs = sorted({live - 1, rng.randrange(2, live)})
    return program, outputs


def run_program(program, outputs, x, y):
    values = [x, y]
    for name, args in program:
        fn = BINARY.get(name) or UNARY[name]
        values.append(fn(*(values[i] for i in args)))
    return tuple(values[i] for i in outputs)


@pytest.mark.parametrize("seed", range(NUM_PROGRAMS))
def test_random_program(seed):
    program, outputs = make_program(seed)
    kiln.manual_seed(seed)
    x, y = kiln.randn(*SHAPE), kiln.randn(*SHAPE)
    session = _C._capture.Session()
    session.add_input(x)
    session.add_input(y)
    with kiln.no_grad(), session:
        result = run_program(program, outputs, x, y)
    for t in result:
        session.mark_output(t)
    assert not session.broken, session.break_reason
    inputs = list(session.input_tensors)
    graph = session.take_graph()
    captured = str(graph)
    before = _C._ir.run(graph, [t.clone() for t in inputs])
    _C._passes.run_pipeline(graph, verify=True)
    after = _C._ir.run(graph, [t.clone() for t in inputs])
    context = f"program: {program} -> {outputs}\ncaptured:\n{captured}\nafter the pipeline:\n{graph}"
    for b, a in zip(before, after):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), context
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5, err_msg=context)
