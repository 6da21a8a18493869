"""kiln.nn.utils' additions (parametrize.py, parametrizations.py, weight_norm.py,
spectral_norm.py, stateless.py, fusion.py, prune.py, memory_format.py, init.py,
clip_grad_norm) against torch.nn.utils: state_dict layouts, values and
gradients with torch's tensors copied in, reprs, and error types / messages."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest
import torch
import torch.nn.utils.prune as tprune

import kiln
import kiln.nn.utils.prune as kprune
from torch_compare import assert_same_error, torch_copy as T


def K(t):
    return kiln.from_numpy(np.array(t.detach().numpy(), copy=True))


def close(k, t, **kw):
    assert tuple(k.shape) == tuple(t.shape), (tuple(k.shape), tuple(t.shape))
    torch.testing.assert_close(T(k), t.detach(), **kw)


def load_from_torch(kmod, tmod):
    tstate = tmod.state_dict()
    assert list(kmod.state_dict()) == list(tstate)
    kmod.load_state_dict({n: K(v) for n, v in tstate.items()})


def pair_linear(i=3, o=4, **kw):
    tm = torch.nn.Linear(i, o, **kw).double()
    km = kiln.nn.Linear(i, o, **kw).double()
    load_from_torch(km, tm)
    return km, tm


def data(shape, seed=0, grad=False):
    t = torch.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=grad)
    return K(t).requires_grad_(grad), t


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return fn(*args, **kwargs)


@pytest.mark.parametrize("name", ["clip_grad_norm", "convert_conv2d_weight_memory_format",
                                  "convert_conv3d_weight_memory_format", "fuse_conv_bn_eval", "fuse_conv_bn_weights",
                                  "fuse_linear_bn_eval", "fuse_linear_bn_weights", "fusion", "init", "memory_format",
                                  "parametrizations", "parametrize", "remove_spectral_norm", "remove_weight_norm",
                                  "skip_init", "spectral_norm", "stateless", "weight_norm", "rnn"])
def test_torch_nn_utils_names_exist(name):
    assert hasattr(torch.nn.utils, name) and hasattr(kiln.nn.utils, name), name


def test_clip_grad_norm_deprecated_alias():
    m = kiln.nn.Linear(2, 2)
    (m(kiln.ones(1, 2)) * 10).sum().backward()
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        norm = kiln.nn.utils.clip_grad_norm(m.parameters(), 1.0)
    assert float(norm) > 1.0
    assert float(kiln.nn.utils.get_total_norm([p.grad for p in m.parameters()])) == pytest.approx(1.0, rel=1e-4)


# --- weight_norm / spectral_norm (hooks) ----------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_hook_matches_torch(dim):
    tm = torch.nn.Linear(3, 4).double()
    km = kiln.nn.Linear(3, 4).double()
    load_from_torch(km, tm)
    with pytest.warns(FutureWarning, match="weight_norm` is deprecated"):
        kiln.nn.utils.weight_norm(km, dim=dim)
    quiet(torch.nn.utils.weight_norm, tm, dim=dim)
    assert list(km.state_dict()) == list(tm.state_dict()) == ["bias", "weight_g", "weight_v"]
    assert tuple(km.weight_g.shape) == tuple(tm.weight_g.shape)
    close(km.weight_g, tm.weight_g)
    with torch.no_grad():
        tm.weight_g.mul_(1.5)
    load_from_torch(km, tm)
    kx, tx = data((2, 3))
    kout, tout = km(kx), tm(tx)
    close(kout, tout)
    kout.sum().backward()
    tout.sum().backward()
    close(km.weight_g.grad, tm.weight_g.grad)
    close(km.weight_v.grad, tm.weight_v.grad)
    kiln.nn.utils.remove_weight_norm(km)
    torch.nn.utils.remove_weight_norm(tm)
    assert list(km.state_dict()) == list(tm.state_dict()) == ["bias", "weight"]
    assert isinstance(km.weight, kiln.nn.Parameter)
    close(km.weight, tm.weight)


def test_weight_norm_hook_errors():
    km = quiet(kiln.nn.utils.weight_norm, kiln.nn.Linear(2, 2))
    tm = quiet(torch.nn.utils.weight_norm, torch.nn.Linear(2, 2))
    assert_same_error(lambda: quiet(kiln.nn.utils.weight_norm, km), lambda: quiet(torch.nn.utils.weight_norm, tm))
    assert_same_error(lambda: kiln.nn.utils.remove_weight_norm(km, "bias"),
                      lambda: torch.nn.utils.remove_weight_norm(tm, "bias"))
    assert_same_error(lambda: quiet(kiln.nn.utils.weight_norm, kiln.nn.LazyLinear(2)),
                      lambda: quiet(torch.nn.utils.weight_norm, torch.nn.LazyLinear(2)))


@pytest.mark.parametrize("make, shape", [(lambda L: L.nn.Linear(3, 4), (2, 3)),
                                         (lambda L: L.nn.Conv2d(2, 3, 2), (1, 2, 3, 3)),
                                         (lambda L: L.nn.ConvTranspose2d(2, 3, 2), (1, 2, 3, 3))])
def test_spectral_norm_hook_matches_torch(make, shape):
    tm, km = make(torch).double(), make(kiln).double()
    load_from_torch(km, tm)
    torch.nn.utils.spectral_norm(tm, n_power_iterations=2)
    kiln.nn.utils.spectral_norm(km, n_power_iterations=2)
    assert list(km.state_dict()) == list(tm.state_dict())
    assert [tuple(v.shape) for v in km.state_dict().values()] == [tuple(v.shape) for v in tm.state_dict().values()]
    load_from_torch(km, tm)  # torch's random u, v
    kx, tx = data(shape)
    for step in range(2):
        kout, tout = km(kx), tm(tx)
        close(kout, tout)
        close(km.weight_u, tm.weight_u)
        close(km.weight_v, tm.weight_v)
    kout.sum().backward()
    tout.sum().backward()
    close(km.weight_orig.grad, tm.weight_orig.grad)
    km.eval()
    tm.eval()
    close(km(kx), tm(tx))
    close(km.weight_u, tm.weight_u)
    kiln.nn.utils.remove_spectral_norm(km)
    torch.nn.utils.remove_spectral_norm(tm)
    assert list(km.state_dict()) == list(tm.state_dict())
    close(km.weight, tm.weight)


def test_spectral_norm_hook_errors():
    km = kiln.nn.utils.spectral_norm(kiln.nn.Linear(2, 2))
    tm = torch.nn.utils.spectral_norm(torch.nn.Linear(2, 2))
    assert_same_error(lambda: kiln.nn.utils.spectral_norm(km), lambda: torch.nn.utils.spectral_norm(tm))
    assert_same_error(lambda: kiln.nn.utils.remove_spectral_norm(km, "bias"),
                      lambda: torch.nn.utils.remove_spectral_norm(tm, "bias"))
    assert_same_error(lambda: kiln.nn.utils.spectral_norm(kiln.nn.Linear(2, 2), n_power_iterations=0),
                      lambda: torch.nn.utils.spectral_norm(torch.nn.Linear(2, 2), n_power_iterations=0))
    assert_same_error(lambda: kiln.nn.utils.spectral_norm(kiln.nn.Linear(2, 2), name="foo"),
                      lambda: torch.nn.utils.spectral_norm(torch.nn.Linear(2, 2), name="foo"))


# --- parametrize -----------------------------------------------------------------------------------------------
def symmetric(L):
    class Symmetric(L.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

        def right_inverse(self, A):
            return A.triu()

    return Symmetric()


def scale(L, k=2.0):
    class Scale(L.nn.Module):
        def forward(self, X):
            return X * k

    return Scale()


def split(L):
    class Split(L.nn.Module):
        def forward(self, A, B):
            return A + B

        def right_inverse(self, X):
            return X * 0.25, X * 0.75

    return Split()


def test_register_parametrization_matches_torch():
    km, tm = pair_linear(4, 4)
    L_pairs = [(km, kiln), (tm, torch)]
    for m, L in L_pairs:
        L.nn.utils.parametrize.register_parametrization(m, "weight", symmetric(L))
    assert type(km).__name__ == type(tm).__name__ == "ParametrizedLinear"
    assert repr(km) == repr(tm)
    assert list(km.state_dict()) == list(tm.state_dict()) == ["bias", "parametrizations.weight.original"]
    close(km.weight, tm.weight)
    close(km.parametrizations.weight.original, tm.parametrizations.weight.original)
    kx, tx = data((2, 4))
    kout, tout = km(kx), tm(tx)
    close(kout, tout)
    kout.sum().backward()
    tout.sum().backward()
    close(km.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad)
    # assignment goes through right_inverse
    value = np.arange(16.0).reshape(4, 4)
    km.weight = kiln.tensor(value, dtype=kiln.float64)
    tm.weight = torch.tensor(value)
    close(km.parametrizations.weight.original, tm.parametrizations.weight.original)
    close(km.weight, tm.weight)
    # a chain: the second parametrization sees the first's output
    for m, L in L_pairs:
        L.nn.utils.parametrize.register_parametrization(m, "weight", scale(L))
    assert repr(km) == repr(tm)
    close(km.weight, tm.weight)
    assert kiln.nn.utils.parametrize.is_parametrized(km) and kiln.nn.utils.parametrize.is_parametrized(km, "weight")
    assert not kiln.nn.utils.parametrize.is_parametrized(km, "bias")
    assert kiln.nn.utils.parametrize.type_before_parametrizations(km) is kiln.nn.Linear
    with kiln.nn.utils.parametrize.cached():
        assert km.weight is km.weight
    assert km.weight is not km.weight


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations_matches_torch(leave):
    km, tm = pair_linear(3, 3)
    for m, L in ((km, kiln), (tm, torch)):
        L.nn.utils.parametrize.register_parametrization(m, "weight", symmetric(L))
        L.nn.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=leave)
    assert type(km) is kiln.nn.Linear and type(tm) is torch.nn.Linear
    assert list(km.state_dict()) == list(tm.state_dict()) == ["bias", "weight"]
    assert isinstance(km.weight, kiln.nn.Parameter)
    close(km.weight, tm.weight)
    assert not hasattr(km, "parametrizations")


def test_parametrization_with_several_originals_and_buffers():
    km, tm = pair_linear(2, 3)
    for m, L in ((km, kiln), (tm, torch)):
        L.nn.utils.parametrize.register_parametrization(m, "weight", split(L))
        m.register_buffer("buf", L.ones(3, dtype=L.float64))
        L.nn.utils.parametrize.register_parametrization(m, "buf", scale(L, 3.0))
    assert list(km.state_dict()) == list(tm.state_dict())
    assert list(km.state_dict()) == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1",
                                     "parametrizations.buf.original"]
    for (kn, kv), (_, tv) in zip(km.state_dict().items(), tm.state_dict().items()):
        close(kv, tv)
    close(km.weight, tm.weight)
    close(km.buf, tm.buf)
    assert not isinstance(km.parametrizations.buf.original, kiln.nn.Parameter)
    assert_same_error(lambda: kiln.nn.utils.parametrize.remove_parametrizations(km, "weight", False),
                      lambda: torch.nn.utils.parametrize.remove_parametrizations(tm, "weight", False))
    kiln.nn.utils.parametrize.remove_parametrizations(km, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
    assert list(km.state_dict()) == list(tm.state_dict())
    assert type(km).__name__ == "ParametrizedLinear"


def test_parametrize_errors_match_torch():
    class Bad:
        pass

    def both(fn):
        km, tm = pair_linear(2, 3)
        return lambda: fn(kiln, km), lambda: fn(torch, tm)

    assert_same_error(*both(lambda L, m: L.nn.utils.parametrize.register_parametrization(m, "foo", scale(L))),
                      message=False)

    def widen(L):
        class Widen(L.nn.Module):
            def forward(self, X):
                return L.cat([X, X])

        return Widen()

    def to_float(L):
        class ToFloat(L.nn.Module):
            def forward(self, X):
                return X.float()

        return ToFloat()

    for make in (widen, to_float):
        assert_same_error(*both(lambda L, m: L.nn.utils.parametrize.register_parametrization(m, "weight", make(L))),
                          message=False)
        kerr = assert_same_error(*both(lambda L, m: L.nn.utils.parametrize.register_parametrization(
            L.nn.utils.parametrize.register_parametrization(m, "weight", scale(L)), "weight", make(L))),
            message=False)
        assert "unless the `unsafe` flag is enabled" in str(kerr)
    assert_same_error(*both(lambda L, m: L.nn.utils.parametrize.remove_parametrizations(m, "weight")), message=False)
    assert_same_error(lambda: kiln.nn.utils.parametrize.ParametrizationList([], kiln.ones(1)),
                      lambda: torch.nn.utils.parametrize.ParametrizationList([], torch.ones(1)))
    km, tm = pair_linear(2, 2)
    kiln.nn.utils.parametrize.register_parametrization(km, "weight", scale(kiln))
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", scale(torch))

    def assign(L, m):
        m.weight = L.ones(2, 2, dtype=L.float64)

    assert_same_error(lambda: assign(kiln, km), lambda: assign(torch, tm))
    err = assert_same_error(lambda: pickle.dumps(km), lambda: pickle.dumps(tm), message=False)  # (a pytorch.org URL)
    assert str(err).startswith("Serialization of parametrized modules is only supported through state_dict()")
    twin = copy.deepcopy(km)
    assert type(twin).__name__ == "ParametrizedLinear" and twin.weight is not km.weight
    close(twin.weight, tm.weight)
    # unsafe lets the shape change
    kiln.nn.utils.parametrize.register_parametrization(km, "weight", widen(kiln), unsafe=True)
    assert tuple(km.weight.shape) == (4, 2)


def test_transfer_parametrizations_and_params():
    src = kiln.nn.Linear(3, 3)
    kiln.nn.utils.parametrize.register_parametrization(src, "weight", symmetric(kiln))
    dst = kiln.nn.Linear(3, 3)
    kiln.nn.utils.parametrize.transfer_parametrizations_and_params(src, dst)
    assert type(dst).__name__ == "ParametrizedLinear"
    assert dst.parametrizations.weight.original is src.parametrizations.weight.original
    assert float((dst.weight - src.weight).abs().max()) == 0


# --- parametrizations --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, None])
def test_parametrizations_weight_norm_matches_torch(dim):
    km, tm = pair_linear(3, 4)
    kiln.nn.utils.parametrizations.weight_norm(km, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(tm, dim=dim)
    assert repr(km) == repr(tm)
    assert list(km.state_dict()) == list(tm.state_dict())
    for (_, kv), (_, tv) in zip(km.state_dict().items(), tm.state_dict().items()):
        close(kv, tv)
    kx, tx = data((2, 3))
    kout, tout = km(kx), tm(tx)
    close(kout, tout)
    kout.sum().backward()
    tout.sum().backward()
    close(km.parametrizations.weight.original0.grad, tm.parametrizations.weight.original0.grad)
    close(km.parametrizations.weight.original1.grad, tm.parametrizations.weight.original1.grad)


@pytest.mark.parametrize("make, shape", [(lambda L: L.nn.Linear(3, 4), (2, 3)),
                                         (lambda L: L.nn.ConvTranspose1d(2, 3, 2), (1, 2, 4))])
def test_parametrizations_spectral_norm_matches_torch(make, shape):
    tm, km = make(torch).double(), make(kiln).double()
    load_from_torch(km, tm)
    torch.nn.utils.parametrizations.spectral_norm(tm)
    kiln.nn.utils.parametrizations.spectral_norm(km)
    assert repr(km) == repr(tm)
    assert list(km.state_dict()) == list(tm.state_dict())
    load_from_torch(km, tm)
    kx, tx = data(shape)
    for _ in range(2):
        kout, tout = km(kx), tm(tx)
        close(kout, tout)
    kout.sum().backward()
    tout.sum().backward()
    close(km.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad)
    for (_, kv), (_, tv) in zip(km.state_dict().items(), tm.state_dict().items()):
        close(kv, tv)
    km.eval()
    tm.eval()
    close(km(kx), tm(tx))
    assert_same_error(lambda: kiln.nn.utils.parametrizations.spectral_norm(kiln.nn.Linear(2, 2), dim=2),
                      lambda: torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(2, 2), dim=2))
    assert_same_error(lambda: kiln.nn.utils.parametrizations.spectral_norm(kiln.nn.Linear(2, 2), name="foo"),
                      lambda: torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(2, 2), name="foo"),
                      message=False)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
@pytest.mark.parametrize("orth_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("trivial", [True, False])
def test_parametrizations_orthogonal(shape, orth_map, trivial):
    tm = torch.nn.Linear(shape[1], shape[0]).double()
    km = kiln.nn.Linear(shape[1], shape[0]).double()
    load_from_torch(km, tm)
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=orth_map, use_trivialization=trivial)
    kiln.nn.utils.parametrizations.orthogonal(km, orthogonal_map=orth_map, use_trivialization=trivial)
    assert repr(km) == repr(tm)
    assert list(km.state_dict()) == list(tm.state_dict())
    w = km.weight.detach()
    small = min(shape)
    gram = w @ w.mT if shape[0] < shape[1] else w.mT @ w
    np.testing.assert_allclose(gram.numpy(), np.eye(small), atol=1e-10)
    load_from_torch(km, tm)  # torch's original (and base): same weight
    close(km.weight, tm.weight)
    kx, tx = data((2, shape[1]))
    kout, tout = km(kx), tm(tx)
    close(kout, tout)
    kout.sum().backward()
    tout.sum().backward()
    close(km.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad)


def test_parametrizations_orthogonal_errors():
    for args in ((kiln.nn.Linear(2, 2), "foo"), (kiln.nn.BatchNorm1d(2), "weight")):
        targs = (torch.nn.Linear(2, 2) if isinstance(args[0], kiln.nn.Linear) else torch.nn.BatchNorm1d(2), args[1])
        assert_same_error(lambda: kiln.nn.utils.parametrizations.orthogonal(*args),
                          lambda: torch.nn.utils.parametrizations.orthogonal(*targs), message=False)
    assert_same_error(lambda: kiln.nn.utils.parametrizations.orthogonal(kiln.nn.Linear(2, 2), orthogonal_map="x"),
                      lambda: torch.nn.utils.parametrizations.orthogonal(torch.nn.Linear(2, 2), orthogonal_map="x"))
    km = kiln.nn.utils.parametrizations.orthogonal(kiln.nn.Linear(2, 2), use_trivialization=False)
    tm = torch.nn.utils.parametrizations.orthogonal(torch.nn.Linear(2, 2), use_trivialization=False)

    def assign(L, m):
        m.weight = L.eye(2)

    assert_same_error(lambda: assign(kiln, km), lambda: assign(torch, tm))


# --- stateless.functional_call --------------------------------------------------------------------------------------
def tied(L):
    class Tied(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = L.nn.Linear(2, 2, bias=False)
            self.b = L.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    return Tied()


def test_functional_call_matches_torch():
    from kiln.nn.utils.stateless import functional_call as kcall
    from torch.nn.utils.stateless import functional_call as tcall

    km, tm = pair_linear(2, 3)
    kw, tw = data((3, 2), grad=True)
    kx, tx = data((1, 2), seed=1)
    with pytest.warns(FutureWarning, match="functional_call"):
        kout = kcall(km, {"weight": kw}, (kx,))
    tout = quiet(tcall, tm, {"weight": tw}, (tx,))
    close(kout, tout)
    kout.sum().backward()
    tout.sum().backward()
    close(kw.grad, tw.grad)
    assert km.weight.grad is None and isinstance(km.weight, kiln.nn.Parameter)
    close(quiet(kcall, km, {}, args=(), kwargs={"input": kx}), quiet(tcall, tm, {}, args=(), kwargs={"input": tx}))
    close(quiet(kcall, km, {"bias": K(torch.ones(3, dtype=torch.float64))}, kx),
          quiet(tcall, tm, {"bias": torch.ones(3, dtype=torch.float64)}, tx))
    for mapping, kwargs in (({"weight": 1}, {"strict": True}), ({"foo": 1}, {"strict": True})):
        assert_same_error(
            lambda: quiet(kcall, km, {k: K(torch.ones(3, 2)) for k in mapping}, kx, **kwargs),
            lambda: quiet(tcall, tm, {k: torch.ones(3, 2) for k in mapping}, tx, **kwargs))
    ktied, ttied = tied(kiln), tied(torch)
    load_from_torch(ktied, ttied)
    eye2 = np.eye(2) * 2
    for tie in (True, False):
        close(quiet(kcall, ktied, {"a.weight": kiln.tensor(eye2, dtype=kiln.float32)}, kiln.ones(1, 2),
                    tie_weights=tie),
              quiet(tcall, ttied, {"a.weight": torch.tensor(eye2, dtype=torch.float32)}, torch.ones(1, 2),
                    tie_weights=tie))
    assert_same_error(lambda: quiet(kcall, ktied, {"a.weight": kiln.eye(2), "b.weight": kiln.eye(2)}, kiln.ones(1, 2)),
                      lambda: quiet(tcall, ttied, {"a.weight": torch.eye(2), "b.weight": torch.eye(2)},
                                    torch.ones(1, 2)))
    assert_same_error(lambda: quiet(kcall, ktied, {"a.weight": kiln.eye(2)}, kiln.ones(1, 2), strict=True,
                                    tie_weights=False),
                      lambda: quiet(tcall, ttied, {"a.weight": torch.eye(2)}, torch.ones(1, 2), strict=True,
                                    tie_weights=False))


def test_functional_call_buffers_and_restoring():
    from kiln.nn.utils.stateless import functional_call as kcall

    bn = kiln.nn.BatchNorm1d(2)
    rm = kiln.zeros(2)
    quiet(kcall, bn, {"running_mean": rm}, kiln.randn(4, 2) + 3)
    assert float(rm.abs().sum()) > 0 and float(bn.running_mean.abs().sum()) == 0

    class Boom(kiln.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = kiln.nn.Linear(2, 2)

        def forward(self, x):
            raise RuntimeError("boom")

    m = Boom()
    w = m.lin.weight
    with pytest.raises(RuntimeError, match="boom"):
        quiet(kcall, m, {"lin.weight": kiln.ones(2, 2), "extra": kiln.ones(1)}, kiln.ones(1, 2))
    assert m.lin.weight is w and not hasattr(m, "extra")


# --- fusion --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("conv, bn, shape, transpose", [
    (lambda L: L.nn.Conv2d(2, 3, 2), lambda L: L.nn.BatchNorm2d(3), (1, 2, 4, 4), False),
    (lambda L: L.nn.Conv1d(2, 3, 2, bias=False), lambda L: L.nn.BatchNorm1d(3, affine=False), (2, 2, 5), False),
    (lambda L: L.nn.ConvTranspose2d(2, 3, 2), lambda L: L.nn.BatchNorm2d(3), (1, 2, 3, 3), True)])
def test_fuse_conv_bn_eval_matches_torch(conv, bn, shape, transpose):
    tc, tb = conv(torch).double().eval(), bn(torch).double().eval()
    with torch.no_grad():
        tb.running_mean.uniform_(-1, 1)
        tb.running_var.uniform_(0.5, 2)
        if tb.weight is not None:
            tb.weight.uniform_(0.5, 2)
            tb.bias.uniform_(-1, 1)
    kc, kb = conv(kiln).double().eval(), bn(kiln).double().eval()
    load_from_torch(kc, tc)
    load_from_torch(kb, tb)
    kf = kiln.nn.utils.fuse_conv_bn_eval(kc, kb, transpose=transpose)
    tf = torch.nn.utils.fuse_conv_bn_eval(tc, tb, transpose=transpose)
    assert kf is not kc and type(kf) is type(kc)
    close(kf.weight, tf.weight)
    close(kf.bias, tf.bias)
    assert isinstance(kf.weight, kiln.nn.Parameter) and kf.weight.grad_fn is None
    kx, tx = data(shape)
    close(kf(kx), T(kb(kc(kx))))
    close(kf(kx), tf(tx))


def test_fuse_linear_bn_eval_matches_torch():
    tl, tb = torch.nn.Linear(3, 4).double().eval(), torch.nn.BatchNorm1d(4).double().eval()
    with torch.no_grad():
        tb.running_mean.uniform_(-1, 1)
        tb.running_var.uniform_(0.5, 2)
    kl, kb = kiln.nn.Linear(3, 4).double().eval(), kiln.nn.BatchNorm1d(4).double().eval()
    load_from_torch(kl, tl)
    load_from_torch(kb, tb)
    kf, tf = kiln.nn.utils.fuse_linear_bn_eval(kl, kb), torch.nn.utils.fuse_linear_bn_eval(tl, tb)
    close(kf.weight, tf.weight)
    close(kf.bias, tf.bias)
    kx, tx = data((2, 3))
    close(kf(kx), tf(tx))
    assert_same_error(lambda: kiln.nn.utils.fuse_linear_bn_eval(kiln.nn.Linear(2, 2), kb),
                      lambda: torch.nn.utils.fuse_linear_bn_eval(torch.nn.Linear(2, 2), tb))
    assert_same_error(lambda: kiln.nn.utils.fuse_linear_bn_eval(kl, kiln.nn.BatchNorm1d(3).eval()),
                      lambda: torch.nn.utils.fuse_linear_bn_eval(tl, torch.nn.BatchNorm1d(3).eval()))


# --- memory format, skip_init ---------------------------------------------------------------------------------------
def test_convert_conv_weight_memory_format():
    model = kiln.nn.Sequential(kiln.nn.Conv2d(2, 3, 2), kiln.nn.Sequential(kiln.nn.ConvTranspose2d(3, 2, 2)),
                               kiln.nn.Conv3d(2, 2, 1), kiln.nn.Linear(2, 2))
    before = [p.detach().clone() for p in model.parameters()]
    out = kiln.nn.utils.convert_conv2d_weight_memory_format(model, kiln.channels_last)
    assert out is model
    tmodel = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 2), torch.nn.Sequential(torch.nn.ConvTranspose2d(3, 2, 2)),
                                 torch.nn.Conv3d(2, 2, 1), torch.nn.Linear(2, 2))
    torch.nn.utils.convert_conv2d_weight_memory_format(tmodel, torch.channels_last)
    assert model[0].weight.stride() == tmodel[0].weight.stride() == (8, 1, 4, 2)
    assert model[1][0].weight.stride() == tmodel[1][0].weight.stride()
    assert not model[0].weight.is_contiguous()
    kiln.nn.utils.convert_conv3d_weight_memory_format(model, kiln.channels_last_3d)
    torch.nn.utils.convert_conv3d_weight_memory_format(tmodel, torch.channels_last_3d)
    assert model[2].weight.stride() == tmodel[2].weight.stride()
    for b, p in zip(before, model.parameters()):
        assert isinstance(p, kiln.nn.Parameter) and float((b - p).abs().max()) == 0


def test_skip_init():
    kiln.manual_seed(0)
    expected = kiln.rand(3)
    kiln.manual_seed(0)
    m = kiln.nn.utils.skip_init(kiln.nn.Linear, 5, 4, bias=False)
    assert type(m) is kiln.nn.Linear and tuple(m.weight.shape) == (4, 5) and m.bias is None
    assert float((kiln.rand(3) - expected).abs().max()) == 0  # the RNG stream as if nothing was initialised

    class NoDevice(kiln.nn.Module):
        def __init__(self, n):
            super().__init__()

    class TNoDevice(torch.nn.Module):
        def __init__(self, n):
            super().__init__()

    assert_same_error(lambda: kiln.nn.utils.skip_init(NoDevice, 1), lambda: torch.nn.utils.skip_init(TNoDevice, 1))
    err = assert_same_error(lambda: kiln.nn.utils.skip_init(int), lambda: torch.nn.utils.skip_init(int))
    assert str(err) == "Expected a Module; got <class 'int'>"


# --- prune ----------------------------------------------------------------------------------------------------------
def test_l1_and_ln_pruning_match_torch():
    km, tm = pair_linear(4, 3)
    kprune.l1_unstructured(km, "weight", amount=0.5)
    tprune.l1_unstructured(tm, "weight", amount=0.5)
    assert list(km.state_dict()) == list(tm.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert list(dict(km.named_parameters())) == ["bias", "weight_orig"]
    close(km.weight_mask, tm.weight_mask)
    close(km.weight, tm.weight)
    assert kprune.is_pruned(km) and not kprune.is_pruned(kiln.nn.Linear(1, 1))
    kprune.ln_structured(km, "weight", amount=1, n=2, dim=0)
    tprune.ln_structured(tm, "weight", amount=1, n=2, dim=0)
    khook, thook = list(km._forward_pre_hooks.values()), list(tm._forward_pre_hooks.values())
    assert [type(h).__name__ for h in khook] == [type(h).__name__ for h in thook] == ["PruningContainer"]
    assert [type(m).__name__ for m in khook[0]] == ["L1Unstructured", "LnStructured"]
    close(km.weight_mask, tm.weight_mask)
    kprune.l1_unstructured(km, "weight", amount=2, importance_scores=K(tm.weight_orig.detach().flip(0)))
    tprune.l1_unstructured(tm, "weight", amount=2, importance_scores=tm.weight_orig.detach().flip(0))
    close(km.weight_mask, tm.weight_mask)
    kx, tx = data((2, 4))
    kout, tout = km(kx), tm(tx)
    close(kout, tout)
    kout.sum().backward()
    tout.sum().backward()
    close(km.weight_orig.grad, tm.weight_orig.grad)
    kprune.remove(km, "weight")
    tprune.remove(tm, "weight")
    assert list(km.state_dict()) == list(tm.state_dict()) == ["bias", "weight"]
    assert isinstance(km.weight, kiln.nn.Parameter) and not km._forward_pre_hooks
    close(km.weight, tm.weight)


def test_custom_global_identity_and_random_pruning():
    km, tm = pair_linear(3, 2)
    kprune.custom_from_mask(km, "bias", kiln.tensor([0.0, 1.0]))
    tprune.custom_from_mask(tm, "bias", torch.tensor([0.0, 1.0]))
    close(km.bias, tm.bias)
    k2, t2 = pair_linear(2, 2)
    kprune.global_unstructured([(km, "weight"), (k2, "weight")], pruning_method=kprune.L1Unstructured, amount=4)
    tprune.global_unstructured([(tm, "weight"), (t2, "weight")], pruning_method=tprune.L1Unstructured, amount=4)
    close(km.weight_mask, tm.weight_mask)
    close(k2.weight_mask, t2.weight_mask)
    assert kprune.identity(kiln.nn.Linear(2, 1), "weight").weight_mask.tolist() == [[1.0, 1.0]]
    m = kprune.random_unstructured(kiln.nn.Linear(5, 4), "weight", amount=0.25)
    assert float(m.weight_mask.sum()) == 15
    m = kprune.random_structured(kiln.nn.Conv2d(2, 4, 3), "weight", amount=2, dim=0)
    assert float(m.weight_mask.sum()) == 2 * 2 * 9
    assert float(m.weight_mask.sum(dim=(1, 2, 3)).ne(0).sum()) == 2
    assert kiln.nn.utils.prune.L1Unstructured(0.5).compute_mask(kiln.tensor([3.0, 1, 2, 4]), kiln.ones(4)).tolist() == \
        tprune.L1Unstructured(0.5).compute_mask(torch.tensor([3.0, 1, 2, 4]), torch.ones(4)).tolist()


def test_pruning_errors_match_torch():
    for amount in (1.5, -1, 10, "a"):
        assert_same_error(lambda: kprune.l1_unstructured(kiln.nn.Linear(2, 2), "weight", amount=amount),
                          lambda: tprune.l1_unstructured(torch.nn.Linear(2, 2), "weight", amount=amount))
    km, tm = kiln.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    assert_same_error(lambda: kprune.l1_unstructured(km, "weight", amount=10),
                      lambda: tprune.l1_unstructured(tm, "weight", amount=10))
    # a failed prune puts the parameter back (re-registered last, as torch) and adds no hook
    assert list(km.state_dict()) == list(tm.state_dict()) == ["bias", "weight"]
    assert not km._forward_pre_hooks and isinstance(km.weight, kiln.nn.Parameter)
    err = assert_same_error(lambda: kprune.ln_structured(kiln.nn.Linear(2, 2), "weight", amount=1, n=2, dim=3),
                            lambda: tprune.ln_structured(torch.nn.Linear(2, 2), "weight", amount=1, n=2, dim=3),
                            message=False)
    assert str(err).startswith("Invalid index 3 for tensor of size")
    assert_same_error(lambda: kprune.ln_structured(kiln.nn.Linear(2, 2), "bias", amount=1, n=2, dim=0),
                      lambda: tprune.ln_structured(torch.nn.Linear(2, 2), "bias", amount=1, n=2, dim=0),
                      message=False)
    assert_same_error(lambda: kprune.remove(kiln.nn.Linear(2, 2), "weight"),
                      lambda: tprune.remove(torch.nn.Linear(2, 2), "weight"), message=False)
    assert_same_error(lambda: kprune.global_unstructured([(kiln.nn.Linear(2, 2), "weight")], kprune.LnStructured,
                                                         amount=1, n=2, dim=0),
                      lambda: tprune.global_unstructured([(torch.nn.Linear(2, 2), "weight")], tprune.LnStructured,
                                                         amount=1, n=2, dim=0), message=False)
