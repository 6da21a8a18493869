"""dropout, native_dropout, nn.Dropout and the channel-wise / alpha forms: kiln draws from its own Philox
generator, so values cannot match torch bit for bit; these tests check the
invariants and statistics torch's dropout has (zeros or x / (1 - p), a keep
rate of 1 - p, gradients through the same mask, p = 0 / p = 1 / eval
behaviour, reproducibility under manual_seed and any thread count) and the
error cases against torch."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as F
from nn_compare import close, pair
from torch_compare import assert_same_error

N = 200_000


def ones(shape=(N,), dtype=kiln.float32, requires_grad=False):
    x = kiln.ones(shape, dtype=dtype)
    return x.requires_grad_(True) if requires_grad else x


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_keep_rate_and_scale(p, dtype):
    x = ones(dtype=getattr(kiln, dtype))
    y = np.array(F.dropout(x, p).float().tolist())
    kept = y != 0
    # Binomial(N, 1 - p): 6 standard deviations.
    assert abs(kept.mean() - (1 - p)) < 6 * math.sqrt(p * (1 - p) / N)
    tol = 1e-2 if dtype == "bfloat16" else 1e-6
    np.testing.assert_allclose(y[kept], 1 / (1 - p), rtol=tol)
    assert abs(y.mean() - 1) < 6 * math.sqrt(p / (1 - p) / N)


def test_native_dropout_mask_and_backward():
    kiln.manual_seed(3)
    x = kiln.randn(300, 200)
    out, mask = kiln.native_dropout(x, 0.3, True)
    assert mask.dtype == kiln.bool and tuple(mask.shape) == (300, 200)
    scale = 1 / 0.7
    close(out, torch.from_numpy(x.numpy() * mask.numpy() * np.float32(scale)), rtol=1e-6, atol=1e-6)
    g = kiln.randn(300, 200)
    back = kiln.native_dropout_backward(g, mask, scale)
    tback = torch.ops.aten.native_dropout_backward(torch.from_numpy(g.numpy()), torch.from_numpy(mask.numpy()), scale)
    close(back, tback)
    # eval: the input unchanged and an all-true mask, as torch
    out, mask = kiln.native_dropout(x, 0.3, False)
    tout, tmask = torch.native_dropout(torch.from_numpy(x.numpy()), 0.3, False)
    close(out, tout)
    close(mask, tmask)


def test_gradient_uses_the_same_mask():
    x = kiln.randn(1000, requires_grad=True)
    y = F.dropout(x, 0.4)
    y.sum().backward()
    kept = y.detach().numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, 1 / 0.6, 0.0), rtol=1e-6)


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_p_zero_and_one(p):
    k, t = pair((50, 7), requires_grad=True)
    ko, to = F.dropout(k, p), TF.dropout(t, p)
    close(ko, to)
    ko.sum().backward()
    to.sum().backward()
    close(k.grad, t.grad)


def test_eval_and_module():
    k, t = pair((20, 30))
    close(F.dropout(k, 0.5, training=False), TF.dropout(t, 0.5, training=False))
    m = kiln.nn.Dropout(0.25)
    m.eval()
    close(m(k), t)
    m.train()
    y = m(ones()).numpy()
    assert abs((y != 0).mean() - 0.75) < 0.01
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}


def test_inplace():
    x = ones((1000,))
    y = F.dropout(x, 0.5, inplace=True)
    assert y.data_ptr() == x.data_ptr()
    v = x.numpy()
    assert set(np.unique(v)) <= {0.0, 2.0} and 0.3 < (v == 2.0).mean() < 0.7
    m = kiln.nn.Dropout(0.5, inplace=True)
    z = ones((1000,))
    m(z)
    assert set(np.unique(z.numpy())) <= {0.0, 2.0}
    a = ones((100,), requires_grad=True)
    b = a * 1.0
    F.dropout(b, 0.5, inplace=True).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.detach().numpy())


def test_reproducible_and_thread_independent():
    x = ones((100_000,))
    kiln.manual_seed(1234)
    a = F.dropout(x, 0.5).numpy()
    threads = kiln.get_num_threads()
    try:
        kiln.set_num_threads(1)
        kiln.manual_seed(1234)
        b = F.dropout(x, 0.5).numpy()
    finally:
        kiln.set_num_threads(threads)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, F.dropout(x, 0.5).numpy())  # the generator moved on


def test_noncontiguous_and_empty():
    x = kiln.ones((300, 400)).t()
    y = F.dropout(x, 0.5).numpy()
    assert y.shape == (400, 300) and set(np.unique(y)) <= {0.0, 2.0}
    e = kiln.ones((0, 3))
    assert tuple(F.dropout(e, 0.5).shape) == (0, 3)
    out, mask = kiln.native_dropout(e, 0.5, True)
    assert tuple(out.shape) == (0, 3) and tuple(mask.shape) == (0, 3)


def test_errors():
    k, t = pair((3,))
    assert_same_error(lambda: F.dropout(k, 1.5), lambda: TF.dropout(t, 1.5))
    assert_same_error(lambda: F.dropout(k, -0.1), lambda: TF.dropout(t, -0.1))
    assert_same_error(lambda: kiln.dropout(k, 1.5, True), lambda: torch.dropout(t, 1.5, True))
    assert_same_error(lambda: kiln.nn.Dropout(2.0), lambda: torch.nn.Dropout(2.0))
    leaf = kiln.ones(3, requires_grad=True)
    tleaf = torch.ones(3, requires_grad=True)
    assert_same_error(lambda: F.dropout(leaf, 0.5, inplace=True), lambda: TF.dropout(tleaf, 0.5, inplace=True),
                      message=False)


# --- channel-wise (feature) and alpha dropout ---------------------------------------------------

@pytest.mark.parametrize("name,shape", [("dropout1d", (8, 50, 7)), ("dropout1d", (50, 7)), ("dropout2d", (8, 50, 3, 4)),
                                        ("dropout2d", (8, 50, 7)), ("dropout3d", (4, 50, 2, 3, 2)),
                                        ("dropout3d", (50, 2, 3, 2))])
@pytest.mark.filterwarnings("ignore:dropout2d. Received a 3D input")
def test_channel_dropout_drops_whole_channels(name, shape):
    x = kiln.ones(shape)
    y = getattr(F, name)(x, 0.4).numpy()
    assert y.shape == shape
    # every channel is all zeros or all 1 / (1 - p); dropout2d reads a 3-D input as (N, C, L)
    batched_dims = {"dropout1d": 3, "dropout2d": 4, "dropout3d": 5}[name]
    batched = y if y.ndim == batched_dims or (name == "dropout2d" and y.ndim == 3) else y[None]
    per_channel = batched.reshape(batched.shape[0], batched.shape[1], -1)
    assert np.all(per_channel.min(-1) == per_channel.max(-1))
    assert set(np.unique(per_channel)) <= {0.0, np.float32(1 / 0.6)}
    kept = (per_channel[:, :, 0] != 0).mean()
    assert 0.4 < kept < 0.8


@pytest.mark.parametrize("name", ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"])
def test_channel_and_alpha_dropout_identity_cases_and_gradient(name):
    shape = {"dropout1d": (4, 5, 6), "dropout2d": (4, 5, 2, 3)}.get(name, (4, 5, 2, 3, 2))
    k, t = pair(shape, requires_grad=True)
    fn, tfn = getattr(F, name), getattr(TF, name)
    close(fn(k, 0.5, training=False), tfn(t, 0.5, training=False))
    close(fn(k, 0.0, training=True), tfn(t, 0.0, training=True))
    close(fn(k, 1.0, training=True), tfn(t, 1.0, training=True))
    y = fn(k, 0.3, training=True)
    y.sum().backward()
    assert tuple(k.grad.shape) == shape and np.isfinite(k.grad.numpy()).all()


def test_alpha_dropout_keeps_mean_and_variance():
    kiln.manual_seed(7)
    x = kiln.randn(400_000)
    for fn in (F.alpha_dropout, F.feature_alpha_dropout):
        y = fn(x.reshape(2000, 200), 0.3, training=True).numpy()
        assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    t = torch.nn.functional.alpha_dropout(torch.from_numpy(x.numpy()), 0.3, training=True).numpy()
    # dropped elements take the same value in both
    np.testing.assert_allclose(np.unique(np.array(F.alpha_dropout(kiln.zeros(10_000), 0.3, True).tolist())),
                               np.unique(torch.nn.functional.alpha_dropout(torch.zeros(10_000), 0.3, True).numpy()),
                               rtol=1e-6)
    assert abs(t.std() - 1) < 0.02


@pytest.mark.filterwarnings("ignore:dropout2d. Received a 5-D input")
def test_dropout_modules_and_errors():
    for name in ("Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"):
        km, tm = getattr(kiln.nn, name)(0.25), getattr(torch.nn, name)(0.25)
        assert repr(km) == repr(tm)
        km.eval()
        k, t = pair((2, 3, 4, 5, 2))
        close(km(k if name != "Dropout1d" else k[:, :, :, 0, 0]), t if name != "Dropout1d" else t[:, :, :, 0, 0])
        assert_same_error(lambda: getattr(kiln.nn, name)(1.5), lambda: getattr(torch.nn, name)(1.5))
    k, t = pair((2, 3, 4, 5))
    assert_same_error(lambda: F.dropout1d(k, 0.5), lambda: TF.dropout1d(t, 0.5))
    with pytest.warns(UserWarning, match="dropout2d: Received a 3D input"):
        F.dropout2d(kiln.ones(2, 3, 4), 0.5)
    with pytest.warns(UserWarning, match="dropout3d: Received a 3-D input"):
        F.dropout3d(kiln.ones(2, 3, 4), 0.5)
