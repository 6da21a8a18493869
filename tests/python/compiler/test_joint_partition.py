"""What a joint forward+backward graph saves for its backward (issue 23 item 4,
Note [Choosing what to save] in capture/SavePlan.h): the minimum cut on small
graphs whose optimal cut is known by hand (counts, bytes, which values), views
never saved, random ops recomputed only from a generator of their own, nothing
recomputed from an input written back; a table of models whose gradients after
partitioning equal eager's on both backends; the saved bytes of the seed MLP,
a GPT-style block and a pointwise chain."""

import copy

import numpy as np
import pytest

import kiln
import kiln.nn.functional as F
from kiln import _C

RNG = np.random.default_rng(23)


def _partition(text, num_forward_nodes, num_forward_inputs, written=()):
    """(forward, backward, backward_inputs, num_saved, saved_bytes) of the joint graph `text`, whose
    forward returns its first output."""
    joint = _C._ir.parse(text)
    joint.verify()
    parts = _C._capture.partition_joint(joint, num_forward_nodes, num_forward_inputs, 1, list(written))
    parts[0].verify()
    parts[1].verify()
    return parts


def _saved_names(forward, num_saved):
    returned = str(forward).rstrip().splitlines()[-1].strip()
    names = [n.strip().lstrip("%") for n in returned[len("return ("):-1].split(",")]
    return names[len(names) - num_saved:]


def _ops(graph):
    """The op names of graph's nodes, in order."""
    return [line.split("=", 1)[1].strip().split("(")[0] for line in str(graph).splitlines()[1:] if "=" in line]


# A chain after a matmul: the backward reads y, m and a; saving m alone (64 bytes) and recomputing the
# chain beats saving y and m (the old heuristic's choice: it recomputed only ops of one input).
CHAIN = """graph(%x : f32[4, 4], %w : f32[4, 4], %g : f32[4, 4]):
  %m : f32[4, 4] = kiln::mm(%x, %w)
  %a : f32[4, 4] = kiln::sin(%m)
  %b : f32[4, 4] = kiln::mul.Tensor(%a, %m)
  %y : f32[4, 4] = kiln::exp(%b)
  %gb : f32[4, 4] = kiln::mul.Tensor(%g, %y)
  %ga : f32[4, 4] = kiln::mul.Tensor(%gb, %m)
  %gm1 : f32[4, 4] = kiln::mul.Tensor(%gb, %a)
  %ca : f32[4, 4] = kiln::cos(%m)
  %gm2 : f32[4, 4] = kiln::mul.Tensor(%ga, %ca)
  %gm : f32[4, 4] = kiln::add.Tensor(%gm1, %gm2, alpha=1)
  %xt : f32[4, 4] = kiln::t(%x)
  %gw : f32[4, 4] = kiln::mm(%xt, %gm)
  return (%y, %gw)
"""

# The backward reads only tanh(m * n): saving it (64 bytes) beats saving both matmuls (128).
PRODUCT = """graph(%x : f32[4, 4], %w : f32[4, 4], %v : f32[4, 4], %g : f32[4, 4]):
  %m : f32[4, 4] = kiln::mm(%x, %w)
  %n : f32[4, 4] = kiln::mm(%x, %v)
  %p : f32[4, 4] = kiln::mul.Tensor(%m, %n)
  %y : f32[4, 4] = kiln::tanh(%p)
  %gp : f32[4, 4] = kiln::tanh_backward(%g, %y)
  return (%y, %gp)
"""

# The backward reads a bool mask of m: the mask (16 bytes) is saved, not m (64).
MASK = """graph(%x : f32[4, 4], %w : f32[4, 4], %g : f32[4, 4]):
  %m : f32[4, 4] = kiln::mm(%x, %w)
  %k : b8[4, 4] = kiln::gt.Scalar(%m, other=0)
  %y : f32[4, 4] = kiln::mul.Tensor(%m, %k)
  %gm : f32[4, 4] = kiln::mul.Tensor(%g, %k)
  return (%y, %gm)
"""

# The backward reads an expanded row sum: a view is never saved (it would hold its base); the 16-byte
# sum is, and the expand is recomputed (saving m, 64 bytes, and recomputing the sum would cost more).
EXPANDED = """graph(%x : f32[4, 4], %w : f32[4, 4], %g : f32[4, 4]):
  %m : f32[4, 4] = kiln::mm(%x, %w)
  %s : f32[4, 1] = kiln::sum.dim_IntList(%m, dim=[1], keepdim=True, dtype=None)
  %e : f32[4, 4] = kiln::expand(%s, size=[4, 4], implicit=False)
  %y : f32[4, 4] = kiln::mul.Tensor(%m, %e)
  %ge : f32[4, 4] = kiln::mul.Tensor(%g, %e)
  return (%y, %ge)
"""

# exp of an input: recomputed for free, unless the run writes that input back (a copy-back).
FROM_INPUT = """graph(%x : f32[4, 4], %r : f32[4, 4], %g : f32[4, 4]):
  %a : f32[4, 4] = kiln::exp(%r)
  %y : f32[4, 4] = kiln::mul.Tensor(%x, %a)
  %gx : f32[4, 4] = kiln::mul.Tensor(%g, %a)
  return (%y, %gx)
"""

# A linear layer's weight transpose: the backward reads the weight, never a saved w.t().
LINEAR = """graph(%x : f32[2, 3], %w : f32[3, 3], %g : f32[2, 3]):
  %wt : f32[3, 3] = kiln::t(%w)
  %y : f32[2, 3] = kiln::mm(%x, %wt)
  %wtt : f32[3, 3] = kiln::t(%wt)
  %gx : f32[2, 3] = kiln::mm(%g, %wtt)
  return (%y, %gx)
"""

# GELU's output feeds the next matmul's weight gradient: recomputing it from h would save 64 bytes but
# materialise it in the backward (no kernel fuses a producer into a matmul), so both are saved.
GELU_INTO_MATMUL = """graph(%x : f32[4, 4], %w : f32[4, 4], %v : f32[4, 4], %g : f32[4, 4]):
  %h : f32[4, 4] = kiln::mm(%x, %w)
  %a : f32[4, 4] = kiln::gelu(%h, approximate="none")
  %y : f32[4, 4] = kiln::mm(%a, %v)
  %at : f32[4, 4] = kiln::t(%a)
  %gv : f32[4, 4] = kiln::mm(%at, %g)
  %vt : f32[4, 4] = kiln::t(%v)
  %ga : f32[4, 4] = kiln::mm(%g, %vt)
  %gh : f32[4, 4] = kiln::gelu_backward(%ga, %h, approximate="none")
  return (%y, %gv, %gh)
"""

HAND_CUTS = {
    # name: (text, forward nodes, forward inputs, written inputs, saved names, saved bytes, recomputed ops)
    "chain": (CHAIN, 4, 2, (), ["m"], 64, ["kiln::sin", "kiln::mul.Tensor", "kiln::exp"]),
    "product": (PRODUCT, 4, 3, (), ["y"], 64, []),
    "mask": (MASK, 3, 2, (), ["k"], 16, []),
    "expanded": (EXPANDED, 4, 2, (), ["s"], 16, ["kiln::expand"]),
    "from_input": (FROM_INPUT, 2, 2, (), [], 0, ["kiln::exp"]),
    "from_written_input": (FROM_INPUT, 2, 2, (1,), ["a"], 64, []),
    "linear": (LINEAR, 2, 2, (), [], 0, ["kiln::t"]),
    "gelu_into_matmul": (GELU_INTO_MATMUL, 3, 3, (), ["a", "h"], 128, []),
}


@pytest.mark.parametrize("name", sorted(HAND_CUTS))
def test_the_minimum_cut_saves_what_a_hand_cut_saves(name):
    text, nodes, inputs, written, names, nbytes, recomputed = HAND_CUTS[name]
    forward, backward, _, num_saved, saved_bytes = _partition(text, nodes, inputs, written)
    assert _saved_names(forward, num_saved) == names
    assert (num_saved, saved_bytes) == (len(names), nbytes)
    # The backward graph: the recomputed forward nodes in forward order, then the joint graph's backward.
    assert _ops(backward) == recomputed + _ops(_C._ir.parse(text))[nodes:]


def test_partitioned_graphs_compute_what_the_joint_graph_computes():
    joint = _C._ir.parse(CHAIN)
    forward, backward, backward_inputs, num_saved, _ = _partition(CHAIN, 4, 2)
    x, w, g = (kiln.tensor(RNG.standard_normal((4, 4)).astype(np.float32)) for _ in range(3))
    want = _C._ir.run(joint, [x, w, g])
    fwd = _C._ir.run(forward, [x, w])
    bwd = _C._ir.run(backward, [[x, w, g][i] for i in backward_inputs] + fwd[1:])
    np.testing.assert_array_equal(fwd[0].numpy(), want[0].numpy())
    np.testing.assert_array_equal(bwd[0].numpy(), want[1].numpy())


# --- models: gradients after partitioning equal eager's ---------------------------------------------

class _Chain(kiln.nn.Module):
    def __init__(self, width=12):
        super().__init__()
        self.lin = kiln.nn.Linear(width, width)

    def forward(self, x):
        h = self.lin(x)
        s = h.sigmoid()
        u = (s * h).tanh()
        return u * s + (h * 0.5).exp() * u


class _Attention(kiln.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = kiln.nn.Linear(8, 24)
        self.ln = kiln.nn.LayerNorm(8)

    def forward(self, x):
        q, k, v = self.qkv(self.ln(x)).split(8, dim=-1)
        att = (q @ k.transpose(-2, -1)) * 8 ** -0.5
        mask = kiln.ones(x.shape[1], x.shape[1]).tril() == 0
        att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        return x + F.gelu(att @ v)


def _seeded(make):
    def build():
        kiln.manual_seed(0)
        return make()
    return build


MODELS = {
    "mlp": (_seeded(lambda: kiln.nn.Sequential(kiln.nn.Linear(8, 16), kiln.nn.ReLU(), kiln.nn.Linear(16, 16),
                                               kiln.nn.Tanh(), kiln.nn.Linear(16, 3))), (6, 8)),
    "cnn_batchnorm": (_seeded(lambda: kiln.nn.Sequential(
        kiln.nn.Conv2d(2, 4, 3, padding=1), kiln.nn.BatchNorm2d(4), kiln.nn.SiLU(), kiln.nn.MaxPool2d(2),
        kiln.nn.Flatten(), kiln.nn.Linear(4 * 3 * 3, 5))), (4, 2, 6, 6)),
    "pointwise_chain": (_seeded(_Chain), (5, 12)),
    "attention": (_seeded(_Attention), (2, 5, 8)),
    "gpt_block": (_seeded(lambda: __import__("kiln.bench._gpt_mini", fromlist=["gpt_block_class"])
                          .gpt_block_class(kiln, 16, 2)()), (2, 6, 16)),
    "layer_norm_gelu_mlp": (_seeded(lambda: kiln.nn.Sequential(kiln.nn.LayerNorm(10), kiln.nn.Linear(10, 20),
                                                               kiln.nn.GELU(), kiln.nn.Linear(20, 10))), (3, 4, 10)),
    "log_softmax_head": (_seeded(lambda: kiln.nn.Sequential(kiln.nn.Linear(6, 9), kiln.nn.Mish(),
                                                            kiln.nn.Linear(9, 4), kiln.nn.LogSoftmax(dim=-1))),
                         (7, 6)),
}


@pytest.mark.parametrize("backend", ["eager", "default"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_gradients_of_a_partitioned_model_equal_eager(name, backend):
    make, shape = MODELS[name]
    eager = make()
    model = copy.deepcopy(eager)
    compiled = kiln.compile(model, backend=backend, fullgraph=True)
    for _ in range(3):  # capture, then replays
        x = kiln.tensor(RNG.standard_normal(shape).astype(np.float32))
        want = eager(x)
        got = compiled(x)
        weights = kiln.tensor(RNG.standard_normal(tuple(want.shape)).astype(np.float32))
        (want * weights).sum().backward()
        (got * weights).sum().backward()
        if backend == "eager":
            np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        else:
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)
        for (pname, p), (_, q) in zip(eager.named_parameters(), model.named_parameters()):
            if backend == "eager":
                np.testing.assert_array_equal(q.grad.numpy(), p.grad.numpy(), err_msg=pname)
            else:
                np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=pname)
        for (bname, b), (_, c) in zip(eager.named_buffers(), model.named_buffers()):
            np.testing.assert_array_equal(c.numpy(), b.numpy(), err_msg=bname)
    assert compiled._compiled_call.num_captures == 1


# --- random ops -------------------------------------------------------------------------------------

def _program(compiled):
    calls = getattr(compiled, "_compiled_call", compiled)
    return next(e for e in calls.cache.values() if hasattr(e, "program")).program


def _draw_then_pointwise(x):
    r = kiln.rand_like(x)
    return x * r.exp() + x.sin() * r.sigmoid()


RANDOM_FNS = {
    # name: (fn, saved count, saved bytes per element, an op recomputed from the saved draw or None)
    # rand_like draws into a fresh tensor in place; the bool mask of it is the cheapest value to save.
    "rand_like_mask": (lambda x: x * (kiln.rand_like(x) > 0.5), 1, 1, None),
    # dropout (bernoulli_ into a fresh tensor): its mask is saved, the scaled product recomputed from it.
    "dropout": (lambda x: F.dropout(x.sin(), 0.4, training=True) * x, 1, 1, "kiln::sin"),
    "bernoulli": (lambda x: x * kiln.bernoulli(x.sigmoid()), 1, 4, None),
    # the draw is saved once; exp and sigmoid of it are recomputed from it in the backward.
    "draw_then_pointwise": (_draw_then_pointwise, 1, 4, "kiln::sigmoid"),
}


@pytest.mark.parametrize("backend", ["eager", "default"])
@pytest.mark.parametrize("name", sorted(RANDOM_FNS))
def test_random_ops_are_saved_and_gradients_keep_eagers_numbers(name, backend):
    fn, count, element_bytes, recomputed = RANDOM_FNS[name]
    compiled = kiln.compile(fn, backend=backend, fullgraph=True)
    for i in range(4):
        x = kiln.tensor(RNG.standard_normal((6, 10)).astype(np.float32), requires_grad=True)
        kiln.manual_seed(50 + i)
        want = fn(x)
        (want_grad,) = kiln.autograd.grad(want.sum() + (want * want).sum(), x)
        after_eager = kiln.rand(2)
        kiln.manual_seed(50 + i)
        got = compiled(x)
        (got_grad,) = kiln.autograd.grad(got.sum() + (got * got).sum(), x)
        if backend == "eager":
            np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
            np.testing.assert_array_equal(got_grad.numpy(), want_grad.numpy())
        else:
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(got_grad.numpy(), want_grad.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(kiln.rand(2).numpy(), after_eager.numpy())
    program = _program(compiled)
    assert (program.num_saved, program.saved_bytes) == (count, 60 * element_bytes)
    backward_ops = _ops(program.backward.graph)
    assert "capture::philox_generator" not in backward_ops  # no draw is made again
    assert recomputed is None or recomputed in backward_ops
    assert compiled.num_captures == 1


# --- the benchmarks' models (bench/compile_partition.py): saved values --------------------------------

def _gpt_block():
    from kiln.bench._gpt_mini import gpt_block_class
    return gpt_block_class(kiln, 128, 4)()


BENCH_MODELS = {
    # name: (model, input shape, saved values, saved bytes)
    # relu's output: threshold_backward and the second layer's weight gradient (a matmul) read it.
    "seed_mlp": (lambda: kiln.nn.Sequential(kiln.nn.Linear(784, 128), kiln.nn.ReLU(), kiln.nn.Linear(128, 10)),
                 (64, 784), 1, 64 * 128 * 4),
    # the linear layer's output only: sigmoid, tanh, exp and the products are recomputed inside the
    # backward's pointwise kernel (the old heuristic saved 4 values, 2 MiB).
    "pointwise_chain": (lambda: _Chain(512), (256, 512), 1, 256 * 512 * 4),
    # GELU's input and output (its output feeds a weight gradient's matmul), ln_2's output and input,
    # the attention output, the qkv projection (q, k and v are views of it: saved once), ln_1's output,
    # the two norms' mean and rstd and attention's logsumexp (the old heuristic saved 15 values, q, k
    # and v and two other views separately).
    "gpt_block": (_gpt_block, (8, 64, 128), 12,
                  2 * (8 * 64 * 512 * 4) + 4 * (8 * 64 * 128 * 4) + 8 * 64 * 384 * 4 + 4 * (8 * 64 * 4) + 8 * 4 * 64 * 4),
}


@pytest.mark.parametrize("name", sorted(BENCH_MODELS))
def test_saved_values_of_the_benchmark_models(name):
    make, shape, count, nbytes = BENCH_MODELS[name]
    kiln.manual_seed(0)
    compiled = kiln.compile(make(), backend="eager")
    compiled(kiln.tensor(RNG.standard_normal(shape).astype(np.float32)))
    program = _program(compiled)
    assert (program.num_saved, program.saved_bytes) == (count, nbytes)
