"""In-place ops under autograd, compared with torch: ops whose formulas read the
value self had before the op (mul_, div_, pow_, addcmul_, ...) keep a copy of it,
so their gradients, and gradients of gradients, match torch's."""

import numpy as np
import pytest
import torch

import kiln

RNG = np.random.default_rng(7)

# name -> (the in-place call, how many extra operands)
INPLACE = {
    "mul_": (lambda a, o: a.mul_(o[0]), 1),
    "pow_ scalar": (lambda a, o: a.pow_(3), 0),
    "addcmul_": (lambda a, o: a.addcmul_(o[0], o[1], value=0.5), 2),
    "clamp_": (lambda a, o: a.clamp_(-0.5, 0.7), 0),
    "lerp_": (lambda a, o: a.lerp_(o[0], 0.3), 1),
    "div_": (lambda a, o: a.div_(o[0]), 1),
    "pow_ tensor": (lambda a, o: a.pow_(o[0]), 1),
    "addcdiv_": (lambda a, o: a.addcdiv_(o[0], o[1], value=-2), 2),
    "mul_ then sub_": (lambda a, o: a.mul_(o[0]).sub_(o[1], alpha=2), 2),
    "mul_ then add_": (lambda a, o: a.mul_(o[0]).add_(o[1], alpha=2), 2),
}


def operands(n_extra):
    base = RNG.uniform(0.5, 1.5, size=(3, 4)) * RNG.choice([-1.0, 1.0], size=(3, 4))
    extras = [RNG.uniform(0.5, 2.0, size=(3, 4)) for _ in range(n_extra)]
    return base, extras


def run(lib, fn, base, extras, create_graph=False):
    x = lib.tensor(base, dtype=lib.float64, requires_grad=True)
    others = [lib.tensor(e, dtype=lib.float64, requires_grad=True) for e in extras]
    a = x * 1.5  # a non-leaf: in-place on it rebases its history
    out = fn(a, others)
    grad_out = lib.tensor(np.linspace(-1, 1, 12).reshape(3, 4), dtype=lib.float64)
    grads = lib.autograd.grad(out, [x] + others, grad_out, create_graph=create_graph)
    return out, grads, [x] + others


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_gradients_match_torch(name):
    fn, n_extra = INPLACE[name]
    base, extras = operands(n_extra)
    k_out, k_grads, _ = run(kiln, fn, base, extras)
    t_out, t_grads, _ = run(torch, fn, base, extras)
    np.testing.assert_allclose(k_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-12)
    for kg, tg in zip(k_grads, t_grads):
        np.testing.assert_allclose(kg.numpy(), tg.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["mul_", "div_", "pow_ scalar", "mul_ then add_"])
def test_inplace_second_order_gradients_match_torch(name):
    fn, n_extra = INPLACE[name]
    base, extras = operands(n_extra)
    results = []
    for lib in (kiln, torch):
        _, grads, inputs = run(lib, fn, base, extras, create_graph=True)
        # d/dinputs of sum(grad_x * c): a second backward through the first one's graph
        c = lib.tensor(np.arange(12.0).reshape(3, 4) / 12, dtype=lib.float64)
        second = lib.autograd.grad(grads[0] * c, inputs, lib.ones(3, 4, dtype=lib.float64), allow_unused=True,
                                   materialize_grads=True)
        results.append([g.detach().numpy() for g in second])
    for kg, tg in zip(*results):
        np.testing.assert_allclose(kg, tg, rtol=1e-10, atol=1e-12)


def test_inplace_on_a_leaf_that_requires_grad_raises_as_torch():
    for lib in (kiln, torch):
        x = lib.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            x.mul_(2)


def test_inplace_overwriting_a_saved_operand_raises_at_backward_as_torch():
    for lib in (kiln, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        a = x * 2
        a.mul_(a)  # saves a as `other`, then overwrites it
        with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient computation has been "
                           r"modified by an inplace operation: \[\w+.FloatTensor \[3\]\]"):
            a.backward(lib.ones(3))


def test_inplace_plain_tensor_with_grad_operand_records_history():
    # self needs no grad but the operand does: the result gets history, and
    # the operand's gradient uses self's value from before the op.
    for lib in (kiln, torch):
        w = lib.tensor([2.0, -3.0], requires_grad=True)
        a = lib.tensor([5.0, 7.0])
        a.mul_(w)
        a.mul_(w)
        assert a.requires_grad
        a.backward(lib.ones(2))
        assert w.grad.tolist() == [20.0, -42.0]  # d(a w^2)/dw = 2 a w
