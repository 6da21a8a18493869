"""Tensor.unfold, sum_to_size, cumsum_/cumprod_, the small queries
(python/kiln/_tensor_methods.py) and kiln.special against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_matches, assert_same_failure
from torch_compare import numpy_pair as _pair, raised


@pytest.mark.parametrize("dimension, size, step", [(0, 2, 1), (1, 3, 2), (-1, 1, 4), (2, 4, 1), (1, 5, 5)])
def test_unfold_matches_torch_and_is_a_view(dimension, size, step):
    data = np.random.default_rng(0).standard_normal((3, 5, 4))
    kx, tx = _pair(data)
    for k, t in ((kx, tx), (kx.transpose(0, 2), tx.transpose(0, 2))):
        if size > t.shape[dimension]:
            assert_same_failure(raised(lambda: k.unfold(dimension, size, step)),
                                raised(lambda: t.unfold(dimension, size, step)))
            continue
        assert_matches(k.unfold(dimension, size, step), t.unfold(dimension, size, step), exact=True)
    view = kx.unfold(1, 2, 1)
    view[0, 0, 0, 0] = 99.0
    assert float(kx[0, 0, 0]) == 99.0


def test_unfold_gradient_accumulates_overlapping_windows():
    data = np.arange(6.0)
    kx, tx = kiln.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    (kx.unfold(0, 3, 1) ** 2).sum().backward()
    (tx.unfold(0, 3, 1) ** 2).sum().backward()
    assert_matches(kx.grad, tx.grad)
    assert_same_failure(raised(lambda: kiln.ones(4).unfold(0, 2, 0)), raised(lambda: torch.ones(4).unfold(0, 2, 0)))
    assert_matches(kiln.tensor(3.0).unfold(0, 1, 1), torch.tensor(3.0).unfold(0, 1, 1))


def test_sum_to_size_and_inplace_scans():
    kx, tx = _pair(np.random.default_rng(1).standard_normal((2, 3, 4)))
    for size in [(3, 4), (1, 4), (2, 1, 4), (1, 1, 1), (3, 1)]:
        assert_matches(kx.sum_to_size(size), tx.sum_to_size(size))
        assert_matches(kx.sum_to_size(*size), tx.sum_to_size(*size))
    assert_same_failure(raised(lambda: kx.sum_to_size(5, 4)), raised(lambda: tx.sum_to_size(5, 4)))
    for name in ("cumsum_", "cumprod_"):
        k, t = kx.clone(), tx.clone()
        assert getattr(k, name)(1) is k
        getattr(t, name)(1)
        assert_matches(k, t)


def test_small_queries_match_torch():
    for data in ([1.5], [0], [True]):
        assert kiln.tensor(data).is_nonzero() == torch.tensor(data).is_nonzero()
    for data in ([], [1, 2]):
        assert_same_failure(raised(lambda: kiln.tensor(data).is_nonzero()), raised(lambda: torch.tensor(data).is_nonzero()))
    assert kiln.ones(2, 3).is_same_size(kiln.zeros(2, 3)) and not kiln.ones(2).is_same_size(kiln.ones(3))
    for name in ("float32", "int64", "uint8", "bool"):
        assert kiln.ones(1, dtype=getattr(kiln, name)).is_signed() == torch.ones(1, dtype=getattr(torch, name)).is_signed()
    assert kiln.ones(1).get_device() == torch.ones(1).get_device() == -1
    assert not kiln.ones(1).is_pinned()


SPECIAL = [("expit", {}), ("logit", {}), ("erf", {}), ("erfc", {}), ("erfinv", {"unit": True}), ("erfcx", {}),
           ("gammaln", {"positive": True}), ("digamma", {"positive": True}), ("psi", {"positive": True}),
           ("xlog1py", {}), ("entr", {}), ("sinc", {}), ("ndtr", {}), ("ndtri", {"prob": True}), ("log_ndtr", {}),
           ("expm1", {}), ("exp2", {}), ("log1p", {"positive": True}), ("multigammaln", {"positive": True})]


@pytest.mark.parametrize("name, kind", SPECIAL, ids=[n for n, _ in SPECIAL])
def test_special_functions_match_torch(name, kind):
    rng = np.random.default_rng(3)
    if kind.get("unit") or kind.get("prob"):
        data = rng.uniform(0.02 if kind.get("prob") else -0.95, 0.98 if kind.get("prob") else 0.95, (9,))
    elif kind.get("positive"):
        data = rng.uniform(1.6, 6, (9,))
    else:
        data = rng.uniform(-3, 3, (9,))
        data[:2] = [0.0, -0.5]
    kx, tx = _pair(data)
    if name == "xlog1py":
        ky, ty = _pair(rng.uniform(-0.5, 3, (9,)))
        assert_matches(kiln.special.xlog1py(kx, ky), torch.special.xlog1py(tx, ty))
    elif name == "multigammaln":
        assert_matches(kiln.special.multigammaln(kx, 3), torch.special.multigammaln(tx, 3))
    elif name == "logit":
        kp, tp = _pair(rng.uniform(0.05, 0.95, (9,)))
        assert_matches(kiln.special.logit(kp), torch.special.logit(tp))
    else:
        assert_matches(getattr(kiln.special, name)(kx), getattr(torch.special, name)(tx))


def test_special_polygamma_logsumexp_softmax():
    kx, tx = _pair(np.random.default_rng(4).uniform(0.5, 4, (3, 4)))
    assert_matches(kiln.special.polygamma(2, kx), torch.special.polygamma(2, tx))
    assert_matches(kiln.special.logsumexp(kx, 1), torch.special.logsumexp(tx, 1))
    assert_matches(kiln.special.softmax(kx, 0), torch.special.softmax(tx, 0))
    assert_matches(kiln.special.log_softmax(kx, 1), torch.special.log_softmax(tx, 1))
    assert_matches(kiln.special.round(kx * 10, decimals=1), torch.special.round(tx * 10, decimals=1))


def test_index_copy_and_put_match_torch():
    base = np.zeros((5, 3))
    src = np.arange(9.0).reshape(3, 3)
    kx, tx = _pair(base)
    ki, ti = kiln.tensor([0, 4, 2]), torch.tensor([0, 4, 2])
    ks, ts = _pair(src)
    assert_matches(kx.index_copy(0, ki, ks), tx.index_copy(0, ti, ts), exact=True)
    kc, tc = _pair(np.arange(10.0).reshape(2, 5).T)  # a (5, 2) source, non-contiguous
    kc, tc = kc.t().contiguous().t(), tc.t().contiguous().t()
    assert_matches(kiln.index_copy(kx, 1, ki[:2] % 3, kc), torch.index_copy(tx, 1, ti[:2] % 3, tc), exact=True)
    k, t = kx.clone(), tx.clone()
    assert k.index_copy_(0, ki, ks) is k
    t.index_copy_(0, ti, ts)
    assert_matches(k, t, exact=True)
    assert_same_failure(raised(lambda: kx.index_copy(0, kiln.tensor([0, 5]), kiln.ones(2, 3, dtype=kiln.float64))),
                        raised(lambda: tx.index_copy(0, torch.tensor([0, 5]), torch.ones(2, 3, dtype=torch.float64))))
    assert_same_failure(raised(lambda: kx.index_copy(0, kiln.tensor([0, 1]), ks)),
                        raised(lambda: tx.index_copy(0, torch.tensor([0, 1]), ts)))
    for accumulate in (False, True):
        kp, tp = _pair(np.zeros((2, 3)))
        kidx, tidx = kiln.tensor([1, 5, -1]), torch.tensor([1, 5, -1])
        kv, tv = kiln.tensor([1.0, 2.0, 3.0], dtype=kiln.float64), torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
        assert_matches(kp.put(kidx, kv, accumulate), tp.put(tidx, tv, accumulate), exact=True)
        assert_matches(kp.t().put_(kidx, kv, accumulate), tp.t().put_(tidx, tv, accumulate), exact=True)
    assert_same_failure(raised(lambda: kiln.zeros(2, 3).put_(kiln.tensor([6]), kiln.tensor([1.0]))),
                        raised(lambda: torch.zeros(2, 3).put_(torch.tensor([6]), torch.tensor([1.0]))))
    x = kiln.zeros(4, requires_grad=True)
    src_k = kiln.tensor([1.0, 2.0], requires_grad=True)
    (x.index_copy(0, kiln.tensor([3, 0]), src_k) * kiln.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert src_k.grad.tolist() == [4.0, 1.0] and x.grad.tolist() == [0.0, 2.0, 3.0, 0.0]


@pytest.mark.parametrize("threads", [1, 2])
def test_a_long_contiguous_copy_split_across_threads_equals_torch(threads):
    # copy_ splits a contiguous copy of 256 KiB or more across the thread pool (eager/kernels/cpu/copy/Copy.cpp);
    # a short copy keeps one memmove, and a dtype conversion takes the converting loop.
    n = (1 << 17) + 3
    values = np.random.default_rng(0).standard_normal(n)
    before = kiln.get_num_threads()
    kiln.set_num_threads(threads)
    try:
        src, dst = kiln.tensor(values), kiln.zeros(n, dtype=kiln.float64)
        dst.copy_(src)
        assert np.array_equal(dst.numpy(), values)
        short = kiln.tensor(values[:1000])
        dst[:1000].copy_(short)
        assert np.array_equal(dst.numpy(), values)
        as_float = kiln.zeros(n, dtype=kiln.float32)
        as_float.copy_(src)
        assert np.array_equal(as_float.numpy(), torch.tensor(values).float().numpy())
    finally:
        kiln.set_num_threads(before)
