"""softmax and log_softmax against torch: values over dims, dtypes (dtype=),
non-contiguous and empty inputs, extreme values, gradients, gradcheck, errors."""

import pytest
import torch

import kiln
from nn_compare import FLOATS, REDUCED, F, close, grad_pair, pair
from torch_compare import assert_same_error

OPS = [("softmax", torch.softmax), ("log_softmax", torch.log_softmax)]
SHAPES_DIMS = [((7,), 0), ((3, 5), -1), ((3, 5), 0), ((2, 3, 33), 1), ((2, 3, 33), -1), ((4, 1, 5, 6), 2),
               ((2, 70), 1), ((130, 3), 0), ((), 0)]


@pytest.mark.parametrize("name,torch_fn", OPS)
@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("shape,dim", SHAPES_DIMS)
def test_forward(name, torch_fn, dtype, shape, dim):
    k, t = pair(shape, dtype)
    close(getattr(F, name)(k, dim), torch_fn(t, dim))
    close(getattr(k, name)(dim), getattr(t, name)(dim))


@pytest.mark.parametrize("name,torch_fn", OPS)
@pytest.mark.parametrize("shape,dim", [((4, 6), 0), ((3, 4, 5), 1), ((3, 4, 5), 2)])
def test_noncontiguous(name, torch_fn, shape, dim):
    k, t = pair(shape, noncontiguous=True)
    close(getattr(F, name)(k, dim), torch_fn(t, dim))


@pytest.mark.parametrize("name,torch_fn", OPS)
@pytest.mark.parametrize("src,dst", [("float32", "float64"), ("float64", "float32"), ("float32", "float16"),
                                     ("float16", "float32"), ("bfloat16", "float32")])
def test_dtype_argument(name, torch_fn, src, dst):
    k, t = pair((5, 9), src)
    close(getattr(F, name)(k, 1, dtype=getattr(kiln, dst)), torch_fn(t, 1, dtype=getattr(torch, dst)))


@pytest.mark.parametrize("name,torch_fn", OPS)
@pytest.mark.parametrize("shape,dim", [((0, 5), 1), ((0, 5), 0), ((3, 0), 1), ((3, 0), 0)])
def test_empty(name, torch_fn, shape, dim):
    k, t = pair(shape)
    close(getattr(F, name)(k, dim), torch_fn(t, dim))


@pytest.mark.parametrize("name,torch_fn", OPS)
@pytest.mark.parametrize("dim", [0, 1])
def test_extreme_values(name, torch_fn, dim):
    rows = [[1000.0, 1000.0, -1000.0, 0.0], [-1e30, 5.0, 88.0, 89.0], [float("-inf"), 0.0, 1.0, 2.0],
            [float("-inf")] * 4, [float("nan"), 1.0, 2.0, 3.0], [float("inf"), 1.0, 2.0, 3.0]]
    t = torch.tensor(rows)
    k = kiln.tensor(rows)
    close(getattr(F, name)(k, dim), torch_fn(t, dim))


@pytest.mark.parametrize("name,torch_fn", OPS)
@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("shape,dim", [((3, 17), 1), ((3, 17), 0), ((2, 3, 4), 1), ((), 0)])
def test_backward(name, torch_fn, dtype, shape, dim):
    k, t = pair(shape, dtype, requires_grad=True)
    ko, to = getattr(F, name)(k, dim), torch_fn(t, dim)
    grad_pair(ko, to)
    # float16/bfloat16: torch rounds exp(y) to the reduced type inside its backward, kiln keeps it
    # in float, so the two may differ by one ulp of the reduced type.
    close(k.grad, t.grad, **({"rtol": 1e-2, "atol": 2e-3} if dtype in REDUCED else {}))


@pytest.mark.parametrize("name,torch_fn", OPS)
def test_backward_with_dtype(name, torch_fn):
    k, t = pair((4, 6), "float32", requires_grad=True)
    ko, to = getattr(F, name)(k, 1, dtype=kiln.float64), torch_fn(t, 1, dtype=torch.float64)
    grad_pair(ko, to)
    close(k.grad, t.grad)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((3, 5), 1), ((3, 4, 2), 1)])
def test_gradcheck(name, shape, dim):
    k, _ = pair(shape, "float64", requires_grad=True)
    assert kiln.autograd.gradcheck(lambda x: getattr(F, name)(x, dim), (k,))


@pytest.mark.parametrize("name", ["softmax"])
def test_grad_of_grad_wrt_upstream(name):
    # The backward op is differentiable in grad_output: d(vjp)/d(g) applied through create_graph.
    k, t = pair((3, 5), "float64", requires_grad=True)
    kg, tg = pair((3, 5), "float64", requires_grad=True, seed=3)
    (kgx,) = kiln.autograd.grad(getattr(F, name)(k, 1), k, kg, create_graph=True)
    (tgx,) = torch.autograd.grad(getattr(torch, name)(t, 1), t, tg, create_graph=True)
    close(kgx, tgx)
    kgx.backward(kiln.ones_like(kgx))
    tgx.backward(torch.ones_like(tgx))
    close(kg.grad, tg.grad)


def test_private_ops():
    k, t = pair((4, 5))
    close(F._softmax(k, 1, False), torch._softmax(t, 1, False))
    close(F._log_softmax(k, 0, False), torch._log_softmax(t, 0, False))
    y_k, y_t = F._softmax(k, 1, False), torch._softmax(t, 1, False)
    g_k, g_t = pair((4, 5), seed=5)
    close(F._softmax_backward_data(g_k, y_k, 1, kiln.float32),
          torch._softmax_backward_data(g_t, y_t, 1, torch.float32))
    ly_k, ly_t = F._log_softmax(k, 1, False), torch._log_softmax(t, 1, False)
    close(F._log_softmax_backward_data(g_k, ly_k, 1, kiln.float32),
          torch._log_softmax_backward_data(g_t, ly_t, 1, torch.float32))


@pytest.mark.parametrize("name,torch_fn", OPS)
def test_errors(name, torch_fn):
    k, t = pair((3, 4))
    assert_same_error(lambda: getattr(F, name)(k, 2), lambda: torch_fn(t, 2))
    assert_same_error(lambda: getattr(F, name)(k, -3), lambda: torch_fn(t, -3))
    ki, ti = kiln.tensor([[1, 2], [3, 4]]), torch.tensor([[1, 2], [3, 4]])
    assert_same_error(lambda: getattr(F, name)(ki, 1), lambda: torch_fn(ti, 1), message=False)
