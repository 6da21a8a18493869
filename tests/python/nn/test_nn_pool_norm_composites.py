"""The composites of kiln.nn (kiln/nn/_pooling.py, _normalization.py,
_activations.py, _distances.py, _losses.py: lp_pool1d/2d/3d, local_response_norm,
rrelu, gumbel_softmax, pdist, multilabel_margin_loss, max_unpool1d/2d/3d) and
their layers (with Softmax2d) against torch: values, gradients (float32 and
float64), non-contiguous inputs, torch's errors and reprs; the random ones
(rrelu in training, gumbel_softmax) by their defining properties."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as KF
from nn_compare import FLOATS, close, grad_pair, index_pair, pair
from torch_compare import as_kiln_text, assert_same_error, raised


def compare(name, shape, dtype, args=(), kwargs=None, noncontiguous=False, low=None, high=None):
    kx, tx = pair(shape, dtype, requires_grad=True, noncontiguous=noncontiguous, low=low, high=high)
    ko, to = getattr(KF, name)(kx, *args, **(kwargs or {})), getattr(TF, name)(tx, *args, **(kwargs or {}))
    close(ko, to)
    grad_pair(ko, to)
    close(kx.grad, tx.grad)


CASES = [
    ("lp_pool1d", (2, 3, 9), (2.0, 3), {}, None),
    ("lp_pool1d", (3, 9), (1.5, 2, 1), {"ceil_mode": True}, (0.1, 2.0)),
    ("lp_pool2d", (2, 3, 6, 7), (2, (2, 3)), {"stride": (1, 2)}, None),
    ("lp_pool2d", (3, 6, 7), (3.0, 2), {"ceil_mode": True}, (0.1, 2.0)),
    ("lp_pool3d", (2, 2, 4, 5, 6), (2, 2), {}, None),
    ("lp_pool3d", (2, 4, 5, 6), (1.5, (2, 1, 3), 1), {}, (0.1, 2.0)),
    ("local_response_norm", (2, 5, 3), (3,), {}, None),
    ("local_response_norm", (2, 6, 3, 4), (4,), {"alpha": 0.1, "beta": 0.6, "k": 2.0}, None),
    ("local_response_norm", (2, 4, 3, 2, 2), (5,), {"alpha": 0.5}, None),
    ("rrelu", (3, 7), (0.1, 0.4), {}, None),                                    # eval: the mean slope
    ("pdist", (5, 4), (), {}, None),
    ("pdist", (4, 3), (1.0,), {}, None),
    ("pdist", (4, 3), (3.5,), {}, None),
    ("pdist", (4, 3), (float("inf"),), {}, None),
    ("pdist", (1, 3), (), {}, None),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_composites_match_torch(case, dtype):
    name, shape, args, kwargs, bounds = CASES[case]
    low, high = bounds if bounds else (None, None)
    compare(name, shape, dtype, args, kwargs, low=low, high=high)


@pytest.mark.parametrize("name, shape, args", [("lp_pool2d", (2, 3, 6, 7), (2, 3)),
                                               ("local_response_norm", (2, 5, 3, 4), (3,)),
                                               ("pdist", (5, 4), ())])
def test_noncontiguous_inputs(name, shape, args):
    compare(name, shape, "float32", args, noncontiguous=True)


def test_rrelu_training_draws_slopes_in_bounds():
    kx = kiln.tensor(np.linspace(-3, 3, 400), requires_grad=True)
    out = KF.rrelu(kx, 0.1, 0.3, training=True)
    x, y = kx.detach().numpy(), out.detach().numpy()
    slopes = y[x < 0] / x[x < 0]
    assert np.all((slopes >= 0.1) & (slopes <= 0.3)) and slopes.std() > 0.02     # random, within bounds
    np.testing.assert_array_equal(y[x > 0], x[x > 0])
    out.backward(kiln.ones(400, dtype=kiln.float64))
    grad = kx.grad.numpy()
    np.testing.assert_allclose(grad[x < 0], slopes)                              # the gradient is the slope drawn
    np.testing.assert_array_equal(grad[x > 0], 1.0)
    layer = kiln.nn.RReLU(0.1, 0.3)
    assert not np.allclose(layer(kx).detach().numpy()[x < 0], x[x < 0] * 0.2)   # training by default
    layer.eval()
    np.testing.assert_allclose(layer(kx).detach().numpy()[x < 0], x[x < 0] * 0.2)
    ky = kiln.tensor(np.array([-1.0, 2.0]))
    assert KF.rrelu(ky, 0.2, 0.2, training=True, inplace=True) is ky
    np.testing.assert_allclose(ky.numpy(), [-0.2, 2.0])
    np.testing.assert_allclose(KF.rrelu_(kiln.tensor([-1.0]), 0.5, 0.5).numpy(), [-0.5])


def test_gumbel_softmax_properties():
    kx = kiln.tensor(np.random.default_rng(0).standard_normal((6, 5)), requires_grad=True)
    soft = KF.gumbel_softmax(kx, tau=0.5)
    np.testing.assert_allclose(soft.detach().numpy().sum(1), 1.0)
    assert soft.dtype == kiln.float64 and tuple(soft.shape) == (6, 5)
    hard = KF.gumbel_softmax(kx, tau=0.7, hard=True, dim=0)
    values = hard.detach().numpy()
    assert set(np.unique(values)) <= {0.0, 1.0} and np.all(values.sum(0) == 1)
    weights = kiln.tensor(np.arange(30.0).reshape(6, 5))
    (hard * weights).sum().backward()                                          # straight through: soft's gradient
    assert kx.grad is not None and np.abs(kx.grad.numpy()).sum() > 0
    np.testing.assert_allclose(kx.grad.numpy().sum(0), 0.0, atol=1e-9)         # softmax's gradient sums to 0
    big = kiln.tensor([[0.0, 100.0, 0.0]])                                       # noise cannot beat a margin of 100
    np.testing.assert_array_equal(KF.gumbel_softmax(big, hard=True).numpy(), [[0.0, 1.0, 0.0]])
    with pytest.warns(UserWarning, match="eps"):
        KF.gumbel_softmax(big, eps=1e-3)


MLM_TARGETS = np.array([[3, 0, -1, 1], [1, 2, 3, 0], [2, -1, 0, 1], [-1, 1, 2, 3], [0, 0, 2, -1]])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_multilabel_margin_loss(reduction, dtype):
    kx, tx = pair((5, 4), dtype, requires_grad=True)
    ky, ty = index_pair(MLM_TARGETS)
    ko = KF.multilabel_margin_loss(kx, ky, reduction=reduction)
    to = TF.multilabel_margin_loss(tx, ty, reduction=reduction)
    close(ko, to)
    grad_pair(ko, to)
    close(kx.grad, tx.grad)
    kx, tx = pair((4,), dtype, requires_grad=True)                              # one sample: a scalar loss
    ky, ty = index_pair([2, 0, -1, 3])
    ko, to = kiln.nn.MultiLabelMarginLoss(reduction=reduction)(kx, ky), \
        torch.nn.MultiLabelMarginLoss(reduction=reduction)(tx, ty)
    close(ko, to)
    grad_pair(ko, to)
    close(kx.grad, tx.grad)


def test_multilabel_margin_loss_noncontiguous():
    kx, tx = pair((4, 5), "float32", requires_grad=True, noncontiguous=True)
    ky, ty = index_pair(MLM_TARGETS)
    close(KF.multilabel_margin_loss(kx, ky.t()), TF.multilabel_margin_loss(tx, ty.t()))


UNPOOL_CASES = [
    (1, (2, 3, 8), (2,), {}),
    (1, (3, 9), (3, 2, 1), {}),
    (1, (2, 3, 9), (2, 2), {"output_size": (2, 3, 9)}),
    (2, (2, 3, 6, 8), (2,), {}),
    (2, (3, 6, 7), ((3, 2), (2, 1), (1, 0)), {"output_size": (6, 7)}),
    (2, (2, 3, 7, 7), (2,), {"output_size": (7, 7)}),
    (3, (2, 2, 4, 5, 6), (2,), {"output_size": (4, 5, 6)}),
    (3, (2, 4, 5, 6), (3, 2, 1), {"output_size": (4, 5, 6)}),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(UNPOOL_CASES)))
def test_max_unpool(case, dtype):
    dims, shape, args, kwargs = UNPOOL_CASES[case]
    kx, tx = pair(shape, dtype)
    kp, ki = getattr(KF, f"max_pool{dims}d")(kx, *args, return_indices=True)
    tp, ti = getattr(TF, f"max_pool{dims}d")(tx, *args, return_indices=True)
    kp, tp = kp.detach().requires_grad_(True), tp.detach().requires_grad_(True)
    ko, to = getattr(KF, f"max_unpool{dims}d")(kp, ki, *args, **kwargs), \
        getattr(TF, f"max_unpool{dims}d")(tp, ti, *args, **kwargs)
    close(ko, to)
    grad_pair(ko, to)
    close(kp.grad, tp.grad)
    layer = (kiln.nn, torch.nn)
    size = kwargs.get("output_size")
    kl, tl = (getattr(nn, f"MaxUnpool{dims}d")(*args) for nn in layer)
    close(kl(kp, ki, size), tl(tp, ti, size))


SOFTMAX2D_SHAPES = [(2, 3, 4, 5), (3, 4, 5)]


@pytest.mark.parametrize("shape", SOFTMAX2D_SHAPES)
def test_softmax2d(shape):
    kx, tx = pair(shape, "float64", requires_grad=True)
    ko, to = kiln.nn.Softmax2d()(kx), torch.nn.Softmax2d()(tx)
    close(ko, to)
    grad_pair(ko, to)
    close(kx.grad, tx.grad)


def _layer_cases():
    return [
        (lambda nn: nn.LPPool1d(2, 3), (2, 3, 9)),
        (lambda nn: nn.LPPool2d(1.5, (2, 3), (1, 2), True), (2, 3, 6, 7)),
        (lambda nn: nn.LPPool3d(2, 2), (2, 2, 4, 5, 6)),
        (lambda nn: nn.LocalResponseNorm(3, 0.01, 0.5, 2.0), (2, 5, 3, 4)),
        (lambda nn: nn.RReLU(0.1, 0.2).eval(), (3, 4)),
    ]


@pytest.mark.parametrize("case", range(5))
def test_layers_match_torch(case):
    build, shape = _layer_cases()[case]
    kx, tx = pair(shape, "float64", low=0.1, high=2.0)
    close(build(kiln.nn)(kx), build(torch.nn)(tx))


REPRS = [
    lambda nn: nn.LPPool1d(1.5, 2, 1), lambda nn: nn.LPPool2d(2, 3),
    lambda nn: nn.LPPool3d(2, (1, 2, 2), ceil_mode=True),
    lambda nn: nn.LocalResponseNorm(3), lambda nn: nn.LocalResponseNorm(2, 0.1, 0.5, 3.0), lambda nn: nn.RReLU(),
    lambda nn: nn.RReLU(0.1, 0.3, True), lambda nn: nn.Softmax2d(), lambda nn: nn.MaxUnpool1d(2, 1, 1),
    lambda nn: nn.MaxUnpool2d(2), lambda nn: nn.MaxUnpool3d((2, 1, 2), 1), lambda nn: nn.MultiLabelMarginLoss(),
]


@pytest.mark.parametrize("case", range(len(REPRS)))
def test_reprs(case):
    assert repr(REPRS[case](kiln.nn)) == as_kiln_text(repr(REPRS[case](torch.nn)))


def _ints(lib, values):
    return lib.tensor(np.asarray(values, dtype=np.int64))


ERRORS = [
    ("lrn_dims", lambda L: L.nn.functional.local_response_norm(L.ones(3, 4), 2), False),
    ("rrelu_bounds", lambda L: L.nn.functional.rrelu(L.ones(3), 0.5, 0.1), True),
    ("rrelu_bounds_train", lambda L: L.nn.functional.rrelu(L.ones(3), 0.5, 0.1, True), True),
    ("softmax2d_dims", lambda L: L.nn.Softmax2d()(L.ones(3, 4)), True),
    ("pdist_dims", lambda L: L.nn.functional.pdist(L.ones(2, 3, 4)), True),
    ("pdist_p", lambda L: L.nn.functional.pdist(L.ones(3, 4), -1), True),
    ("pdist_int", lambda L: L.nn.functional.pdist(_ints(L, np.ones((3, 4)))), True),
    ("mlm_size", lambda L: L.nn.functional.multilabel_margin_loss(L.ones(2, 4), _ints(L, [0, 1, 2])), True),
    ("mlm_range", lambda L: L.nn.functional.multilabel_margin_loss(L.ones(2, 4), _ints(L, [[5, -1, 0, 0],
                                                                                          [0, 1, -1, 0]])), True),
    ("mlm_float", lambda L: L.nn.functional.multilabel_margin_loss(L.ones(2, 4), L.zeros(2, 4)), True),
    ("mlm_dims", lambda L: L.nn.functional.multilabel_margin_loss(L.ones(2, 4, 1), _ints(L, np.zeros((2, 4, 1)))),
     True),
    ("mlm_reduction", lambda L: L.nn.functional.multilabel_margin_loss(L.ones(2, 4), _ints(L, np.zeros((2, 4))),
                                                                        reduction="foo"), True),
    ("unpool_index", lambda L: L.nn.functional.max_unpool2d(L.ones(1, 1, 2, 2), _ints(L, [[[[0, 1], [2, 100]]]]), 2),
     True),
    ("unpool_negative", lambda L: L.nn.functional.max_unpool2d(L.ones(1, 1, 2, 2), _ints(L, -np.ones((1, 1, 2, 2))),
                                                              2), True),
    ("unpool_size_len", lambda L: L.nn.functional.max_unpool2d(L.ones(1, 1, 2, 2), _ints(L, np.zeros((1, 1, 2, 2))),
                                                              2, output_size=(3,)), True),
    ("unpool_size", lambda L: L.nn.functional.max_unpool2d(L.ones(1, 1, 2, 2), _ints(L, np.zeros((1, 1, 2, 2))), 2,
                                                          output_size=(6, 4)), True),
    ("unpool_shape", lambda L: L.nn.functional.max_unpool2d(L.ones(1, 1, 2, 2), _ints(L, np.zeros((1, 1, 2, 3))),
                                                           2), True),
    ("unpool_float", lambda L: L.nn.functional.max_unpool2d(L.ones(1, 1, 2, 2), L.zeros(1, 1, 2, 2), 2), True),
    ("unpool_dims", lambda L: L.nn.functional.max_unpool2d(L.ones(2, 2), _ints(L, np.zeros((2, 2))), 2), True),
    ("unpool1d_dims", lambda L: L.nn.functional.max_unpool1d(L.ones(2), _ints(L, np.zeros(2)), 2), True),
    ("unpool1d_index", lambda L: L.nn.functional.max_unpool1d(L.ones(1, 2, 3), _ints(L, [[[0, 1, 9], [0, 0, 0]]]),
                                                             2), True),
    ("unpool3d_index", lambda L: L.nn.functional.max_unpool3d(L.ones(1, 1, 2, 2, 2),
                                                             _ints(L, np.full((1, 1, 2, 2, 2), 64)), 2), True),
    ("unpool3d_dims", lambda L: L.nn.functional.max_unpool3d(L.ones(2, 2, 2), _ints(L, np.zeros((2, 2, 2))), 2),
     True),
]


@pytest.mark.parametrize("name, fn, message", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name, fn, message):
    error = assert_same_error(lambda: fn(kiln), lambda: fn(torch), message=message)
    if not message:
        assert "Expected 3D or higher dimensionality input" in str(error)


def test_empty_inputs():
    kx, tx = pair((0, 4, 3))
    close(KF.local_response_norm(kx, 2), TF.local_response_norm(tx, 2))
    kx, tx = pair((0, 3))
    close(KF.pdist(kx), TF.pdist(tx))
    assert raised(lambda: KF.pdist(kiln.ones(3, 0))) is None and tuple(KF.pdist(kiln.ones(3, 0)).shape) == (3,)
