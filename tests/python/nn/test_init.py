"""kiln.nn.init against torch.nn.init: gains, fans, distributions (bounds, means,
stds, orthogonality), generator= determinism, no_grad, and the errors."""

import math

import numpy as np
import pytest
import torch

import kiln
import kiln.nn.init as kinit
from kiln.nn import Parameter
from torch_compare import assert_same_error

SHAPE = (300, 400)  # 120k draws: sample means and stds are within a few 1e-3 of their expectation


def pair(shape=SHAPE, dtype="float32"):
    return kiln.empty(*shape, dtype=getattr(kiln, dtype)), torch.empty(*shape, dtype=getattr(torch, dtype))


def stats(t):
    a = t.numpy().astype(np.float64) if isinstance(t, kiln.Tensor) else t.double().numpy()
    return a.min(), a.max(), a.mean(), a.std()


@pytest.mark.parametrize("nonlinearity,param", [
    ("linear", None), ("conv1d", None), ("conv2d", None), ("conv_transpose2d", None), ("sigmoid", None),
    ("tanh", None), ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", math.sqrt(5)),
    ("selu", None)])
def test_calculate_gain(nonlinearity, param):
    assert kinit.calculate_gain(nonlinearity, param) == torch.nn.init.calculate_gain(nonlinearity, param)


def test_calculate_gain_errors():
    assert_same_error(lambda: kinit.calculate_gain("swish"), lambda: torch.nn.init.calculate_gain("swish"))
    assert_same_error(lambda: kinit.calculate_gain("leaky_relu", True),
                      lambda: torch.nn.init.calculate_gain("leaky_relu", True))


@pytest.mark.parametrize("shape", [(5, 7), (4, 3, 2), (8, 3, 5, 5)])
def test_fans(shape):
    assert kinit._calculate_fan_in_and_fan_out(kiln.empty(*shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))


def test_fan_errors():
    assert_same_error(lambda: kinit.kaiming_uniform_(kiln.empty(5)), lambda: torch.nn.init.kaiming_uniform_(
        torch.empty(5)))
    assert_same_error(lambda: kinit.kaiming_normal_(kiln.empty(5, 4), mode="fan_avg"),
                      lambda: torch.nn.init.kaiming_normal_(torch.empty(5, 4), mode="fan_avg"))
    assert_same_error(lambda: kinit.orthogonal_(kiln.empty(5)), lambda: torch.nn.init.orthogonal_(torch.empty(5)))


CASES = [
    ("uniform_", dict(a=-0.3, b=0.7)),
    ("normal_", dict(mean=0.5, std=2.0)),
    ("xavier_uniform_", dict(gain=1.5)),
    ("xavier_normal_", dict()),
    ("kaiming_uniform_", dict(a=math.sqrt(5))),
    ("kaiming_uniform_", dict(mode="fan_out", nonlinearity="relu")),
    ("kaiming_normal_", dict()),
    ("kaiming_normal_", dict(a=0.1, mode="fan_out", nonlinearity="leaky_relu")),
    ("trunc_normal_", dict()),
    ("trunc_normal_", dict(mean=0.2, std=0.5, a=-0.5, b=1.0)),
]


@pytest.mark.parametrize("name,kwargs", CASES)
def test_distribution_matches_torch(name, kwargs):
    k, t = pair()
    getattr(kinit, name)(k, **kwargs)
    getattr(torch.nn.init, name)(t, **kwargs)
    kmin, kmax, kmean, kstd = stats(k)
    tmin, tmax, tmean, tstd = stats(t)
    scale = tstd / math.sqrt(k.numel())
    assert abs(kmean - tmean) < 8 * scale, (kmean, tmean)
    assert abs(kstd - tstd) < 0.02 * tstd, (kstd, tstd)
    if "uniform" in name or name == "trunc_normal_":  # bounded: both reach the same bounds
        spread = tmax - tmin
        assert abs(kmin - tmin) < 0.01 * spread, (kmin, tmin)
        assert abs(kmax - tmax) < 0.01 * spread, (kmax, tmax)
    if name in ("uniform_", "trunc_normal_"):  # and never leave the stated interval
        low, high = (kwargs.get("a", 0.0), kwargs.get("b", 1.0)) if name == "uniform_" else \
            (kwargs.get("a", -2.0), kwargs.get("b", 2.0))
        assert low <= kmin and kmax <= high


@pytest.mark.parametrize("name,kwargs", CASES)
def test_generator_determinism(name, kwargs):
    draws = []
    for seed in (7, 7, 8):
        g = kiln.Generator()
        g.manual_seed(seed)
        k = kiln.empty(20, 30)
        getattr(kinit, name)(k, **kwargs, generator=g)
        draws.append(k.numpy().copy())
    np.testing.assert_array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0], draws[2])


def test_default_generator_follows_manual_seed():
    kiln.manual_seed(3)
    a = kinit.normal_(kiln.empty(10)).numpy().copy()
    kiln.manual_seed(3)
    b = kinit.normal_(kiln.empty(10)).numpy().copy()
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("fn,value", [(kinit.zeros_, 0.0), (kinit.ones_, 1.0), (lambda t: kinit.constant_(t, 2.5), 2.5)])
def test_constants(fn, value):
    t = kiln.empty(3, 4)
    assert fn(t) is t
    np.testing.assert_array_equal(t.numpy(), np.full((3, 4), value, np.float32))


def test_eye():
    k, t = kiln.empty(3, 5), torch.empty(3, 5)
    kinit.eye_(k)
    torch.nn.init.eye_(t)
    np.testing.assert_array_equal(k.numpy(), t.numpy())
    assert_same_error(lambda: kinit.eye_(kiln.empty(2, 2, 2)), lambda: torch.nn.init.eye_(torch.empty(2, 2, 2)))


@pytest.mark.parametrize("shape,gain", [((6, 4), 1.0), ((4, 6), 2.0), ((5, 2, 3), 1.0), ((8, 8), 0.5)])
def test_orthogonal(shape, gain):
    k = kiln.empty(*shape)
    assert kinit.orthogonal_(k, gain=gain) is k
    m = k.numpy().reshape(shape[0], -1).astype(np.float64)
    small = min(m.shape)
    gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    np.testing.assert_allclose(gram, gain**2 * np.eye(small), atol=1e-5)


def test_orthogonal_generator():
    outs = []
    for _ in range(2):
        g = kiln.Generator()
        g.manual_seed(11)
        outs.append(kinit.orthogonal_(kiln.empty(5, 5), generator=g).numpy().copy())
    np.testing.assert_array_equal(outs[0], outs[1])


def test_trunc_normal_bounds_tight():
    k = kinit.trunc_normal_(kiln.empty(20000), mean=0.0, std=1.0, a=0.5, b=0.6)
    a = k.numpy()
    assert a.min() >= 0.5 and a.max() <= 0.6


def test_init_runs_under_no_grad_on_parameters():
    p = Parameter(kiln.empty(4, 5))
    for fn in (kinit.uniform_, kinit.normal_, kinit.xavier_uniform_, kinit.kaiming_normal_, kinit.trunc_normal_,
               kinit.zeros_, kinit.orthogonal_):
        out = fn(p)
        assert out is p and p.grad_fn is None and p.requires_grad and p.is_leaf


def test_zero_element_kaiming_warns():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        kinit.kaiming_uniform_(kiln.empty(0, 3))
