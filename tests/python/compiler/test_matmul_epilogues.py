"""Matmul epilogues (issue 24): a matmul followed by pointwise work (a Linear's bias, its activation, a
residual add) runs as the BLAS call into a fresh output, then one fused kernel over it that writes in
place of the product (runtime/MemoryPlan.h); the kernel loads a bias broadcast along rows and the other
operands of its row as vectors (Note [Strided kernels' inner loops], codegen/llvm/KernelLowering.cpp),
and gathers only where the strides at run time are not the recorded ones."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.nn.functional as F
from kiln import _C
from kiln.compiler._backends import _entries, compiled_graphs, kernel_counts


def _spread(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return kiln.tensor((rng.standard_normal(shape) * rng.choice([0.01, 1.0, 30.0], size=shape)).astype(np.float32))


def _same_bits(got, want):
    g, w = got.numpy(), want.numpy()
    return g.shape == w.shape and bool(np.all(((g == w) & (np.signbit(g) == np.signbit(w))) | (np.isnan(g) & np.isnan(w))))


EPILOGUES = {
    # name: (fn of (linear, x, residual), the fused kernel's ops)
    "bias": (lambda lin, x, r: lin(x), ["kiln::add.Tensor"]),
    "bias and gelu": (lambda lin, x, r: F.gelu(lin(x)), ["kiln::add.Tensor", "kiln::gelu"]),
    "bias, gelu and a residual add": (lambda lin, x, r: r + F.gelu(lin(x)),
                                      ["kiln::add.Tensor", "kiln::gelu", "kiln::add.Tensor"]),
    "bias and a residual add": (lambda lin, x, r: r + lin(x), ["kiln::add.Tensor", "kiln::add.Tensor"]),
}


@pytest.mark.parametrize("shape", [(4, 6, 16), (40, 16), (3, 5, 16)])
@pytest.mark.parametrize("name", list(EPILOGUES))
def test_matmul_epilogue_is_one_kernel_in_place_of_the_product(name, shape):
    fn, ops = EPILOGUES[name]
    kiln.manual_seed(0)
    lin = kiln.nn.Linear(16, 40)
    x, r = _spread(*shape), _spread(*shape[:-1], 40, seed=1)
    compiled = kiln.compile(lambda x, r: fn(lin, x, r))
    with kiln.no_grad():
        compiled(x, r)
        got = compiled(x, r)
        want = fn(lin, x, r)
    assert _same_bits(got, want)
    assert kernel_counts(compiled) == [1]
    (graph,) = compiled_graphs(compiled)
    assert graph.kernel_ops == [ops]
    assert graph.eager_ops.count("kiln::mm") == 1
    assert not any(op in graph.eager_ops for op in ("kiln::add.Tensor", "kiln::gelu", "kiln::addmm"))
    assert "1 in place" in graph.memory_plan  # the kernel's output is the product's buffer
    # every operand of the kernel is read along its row as a vector (the bias: the same row each time)
    (kernel,) = graph.kernels
    loads = [line for line in kernel.splitlines() if line.strip().startswith("in")]
    assert loads and all("(inner stride 1)" in line for line in loads), kernel


def test_linear_gelu_training_step_values_and_gradients_equal_eager():
    kiln.manual_seed(0)
    fc1, fc2 = kiln.nn.Linear(16, 48), kiln.nn.Linear(48, 16)
    params = [*fc1.parameters(), *fc2.parameters()]

    def block(x):
        return x + fc2(F.gelu(fc1(x)))

    def run(f, x, g):
        for p in [x, *params]:
            p.grad = None
        y = f(x)
        (y * g).sum().backward()
        return [y.detach()] + [p.grad.clone() for p in [x, *params]]

    compiled = kiln.compile(block)
    x, g = _spread(5, 7, 16).requires_grad_(), _spread(5, 7, 16, seed=2)
    run(compiled, x, g)
    got = run(compiled, x, g)
    want = run(block, x, g)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)
    forward, _ = compiled_graphs(compiled)
    # fc1's bias and gelu (also keeping fc1's output for gelu's backward), fc2's bias and the residual add
    assert forward.kernel_count == 2 and forward.eager_ops.count("kiln::mm") == 2


def test_strides_other_than_recorded_take_the_gathers():
    """A kernel built for a contiguous bias (inner stride 1) given a strided one, or a transposed
    matrix, checks the strides at run time and gathers: the same values as eager."""
    def fn(a, b):
        return (a + b) * 2

    a, b = _spread(6, 32), _spread(32, seed=1)
    compiled = kiln.compile(fn)
    with kiln.no_grad():
        compiled(a, b)
        compiled(a, b)
    (entry,) = _entries(compiled)
    graph = _C._runtime.compile(entry.program.graph, runs_without_autograd=True)
    assert "(inner stride 1)" in graph.kernels[0]
    strided_b = _spread(64, seed=3)[::2]
    transposed_a = _spread(32, 6, seed=4).t()
    for x, y in [(a, b), (a, strided_b), (transposed_a, b), (transposed_a, strided_b)]:
        (got,) = graph.run([x, y])
        assert _same_bits(got, fn(x, y))
