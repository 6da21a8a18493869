"""The torch.nn layers and names kiln.nn gained in kiln/nn/modules/ (lazy.py,
lazy_layers.py, ../parameter.py, conv_transpose3d.py, fractional_pool.py,
loss.py, adaptive.py, cross_map_lrn.py, legacy_container.py,
sync_batchnorm.py, data_parallel.py, _factory_kwargs.py) against torch:
values and gradients with torch's parameters copied in, reprs, state_dict keys,
the lazy modules' inference and class change, and error types / messages."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest
import torch

import kiln
from torch_compare import as_kiln_text, assert_same_error, raised, torch_copy as T


# --- helpers -----------------------------------------------------------------------------
def K(t):
    """A torch tensor's values as a kiln tensor (same dtype), without history."""
    a = np.array(t.detach().numpy(), copy=True)
    return kiln.from_numpy(a).reshape(tuple(t.shape)) if a.ndim == 0 else kiln.from_numpy(a)


def close(k, t, **kw):
    assert tuple(k.shape) == tuple(t.shape), (tuple(k.shape), tuple(t.shape))
    assert str(k.dtype).removeprefix("kiln.") == str(t.dtype).removeprefix("torch."), (k.dtype, t.dtype)
    torch.testing.assert_close(T(k), t.detach(), equal_nan=True, **kw)


def inputs(shape, seed=0, grad=True, dtype=torch.float64):
    rng = np.random.default_rng(seed)
    t = torch.tensor(rng.standard_normal(shape), dtype=dtype, requires_grad=grad)
    k = K(t).requires_grad_(grad)
    return k, t


def copy_params(kmod, tmod):
    """Loads torch's state_dict into kiln's (the keys must agree)."""
    tstate = tmod.state_dict()
    assert list(kmod.state_dict().keys()) == list(tstate.keys())
    kmod.load_state_dict({name: K(v) for name, v in tstate.items()})


def backward_same(kout, tout, seed=1):
    g = np.random.default_rng(seed).standard_normal(tuple(tout.shape))
    tout.backward(torch.tensor(g, dtype=tout.dtype))
    kout.backward(K(torch.tensor(g, dtype=tout.dtype)))


def compare_grads(kmod, tmod):
    for (kn, kp), (tn, tp) in zip(kmod.named_parameters(), tmod.named_parameters()):
        assert kn == tn
        assert (kp.grad is None) == (tp.grad is None), kn
        if tp.grad is not None:
            close(kp.grad, tp.grad)


# --- names -------------------------------------------------------------------------------------
NEW_NAMES = ["ConvTranspose3d", "FractionalMaxPool2d", "FractionalMaxPool3d", "TripletMarginWithDistanceLoss",
             "NLLLoss2d", "AdaptiveLogSoftmaxWithLoss", "CrossMapLRN2d", "LazyLinear", "LazyConv1d", "LazyConv2d",
             "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d",
             "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
             "UninitializedParameter", "UninitializedBuffer", "Buffer", "Container", "SyncBatchNorm", "DataParallel",
             "factory_kwargs"]


@pytest.mark.parametrize("name", NEW_NAMES)
def test_torch_nn_names_exist(name):
    assert hasattr(torch.nn, name)
    assert hasattr(kiln.nn, name), name
    if name not in ("Buffer", "UninitializedParameter", "UninitializedBuffer", "DataParallel", "factory_kwargs"):
        assert getattr(kiln.nn.modules, name) is getattr(kiln.nn, name)


def test_parameter_module_names_and_lazy_mixin_module():
    for name in ("Buffer", "UninitializedParameter", "UninitializedBuffer", "UninitializedTensorMixin", "is_lazy"):
        assert getattr(kiln.nn.parameter, name) is not None
        assert name in dir(kiln.nn.parameter)
    from kiln.nn.parameter import UninitializedParameter  # noqa: F401  (torch's import path)
    assert kiln.nn.modules.lazy.LazyModuleMixin is not None
    with pytest.raises(AttributeError):
        kiln.nn.parameter.NoSuchName  # noqa: B018


# --- ConvTranspose3d ----------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [{}, {"stride": 2, "padding": 1, "output_padding": 1},
                                    {"groups": 2, "bias": False, "dilation": (1, 2, 1)}])
def test_conv_transpose3d_matches_torch(kwargs):
    tm = torch.nn.ConvTranspose3d(4, 6, (2, 3, 2), **kwargs).double()
    km = kiln.nn.ConvTranspose3d(4, 6, (2, 3, 2), **kwargs).double()
    assert repr(km) == repr(tm)
    copy_params(km, tm)
    kx, tx = inputs((2, 4, 3, 4, 3))
    kout, tout = km(kx), tm(tx)
    close(kout, tout)
    backward_same(kout, tout)
    close(kx.grad, tx.grad)
    compare_grads(km, tm)


def test_conv_transpose3d_output_size_and_errors():
    tm = torch.nn.ConvTranspose3d(2, 3, 3, stride=2).double()
    km = kiln.nn.ConvTranspose3d(2, 3, 3, stride=2).double()
    copy_params(km, tm)
    kx, tx = inputs((1, 2, 3, 3, 3), grad=False)
    close(km(kx, output_size=(8, 8, 8)), tm(tx, output_size=(8, 8, 8)))
    assert_same_error(lambda: kiln.nn.ConvTranspose3d(2, 3, 3, padding_mode="reflect"),
                      lambda: torch.nn.ConvTranspose3d(2, 3, 3, padding_mode="reflect"))
    assert_same_error(lambda: kiln.nn.ConvTranspose3d(3, 3, 3, groups=2),
                      lambda: torch.nn.ConvTranspose3d(3, 3, 3, groups=2))
    # torch's init distribution: kaiming_uniform(a=sqrt(5)) -> |w| <= 1/sqrt(fan_in); fan_in = out/groups * k^3
    w = kiln.nn.ConvTranspose3d(8, 4, 3).weight
    bound = 1 / np.sqrt(4 * 27)
    assert float(w.abs().max()) <= bound and float(w.abs().max()) > 0.8 * bound


# --- FractionalMaxPool --------------------------------------------------------------------------
@pytest.mark.parametrize("dims, kwargs", [(2, {"kernel_size": 2, "output_size": 3}),
                                          (2, {"kernel_size": (2, 3), "output_ratio": (0.5, 0.6)}),
                                          (3, {"kernel_size": 2, "output_size": (2, 3, 2)}),
                                          (3, {"kernel_size": 2, "output_ratio": 0.5})])
def test_fractional_max_pool_matches_torch_with_fixed_samples(dims, kwargs):
    shape = (2, 3, 6, 7) if dims == 2 else (2, 3, 5, 6, 5)
    samples = torch.rand(2, 3, dims, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    tcls = getattr(torch.nn, f"FractionalMaxPool{dims}d")
    kcls = getattr(kiln.nn, f"FractionalMaxPool{dims}d")
    tm = tcls(return_indices=True, _random_samples=samples, **kwargs)
    km = kcls(return_indices=True, _random_samples=K(samples), **kwargs)
    assert repr(km) == repr(tm) == f"FractionalMaxPool{dims}d()"
    assert list(km.state_dict()) == list(tm.state_dict()) == ["_random_samples"]
    assert (km.kernel_size, km.output_size, km.output_ratio) == (tm.kernel_size, tm.output_size, tm.output_ratio)
    kx, tx = inputs(shape)
    (kv, ki), (tv, ti) = km(kx), tm(tx)
    close(kv, tv)
    close(ki, ti)
    backward_same(kv, tv)
    close(kx.grad, tx.grad)


def test_fractional_max_pool_without_indices_and_random_shape():
    km = kiln.nn.FractionalMaxPool2d(3, output_ratio=0.5)
    assert list(km.state_dict()) == []
    out = km(kiln.randn(2, 3, 10, 8))
    assert tuple(out.shape) == (2, 3, 5, 4)


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("kwargs", [{"kernel_size": 2}, {"kernel_size": 2, "output_size": 3, "output_ratio": 0.5},
                                    {"kernel_size": 2, "output_ratio": 1.5}, {"kernel_size": 2, "output_ratio": 0},
                                    {"kernel_size": 2, "output_ratio": (0.5, 1.0)}])
def test_fractional_max_pool_constructor_errors(dims, kwargs):
    assert_same_error(lambda: getattr(kiln.nn, f"FractionalMaxPool{dims}d")(**kwargs),
                      lambda: getattr(torch.nn, f"FractionalMaxPool{dims}d")(**kwargs))


# --- TripletMarginWithDistanceLoss / NLLLoss2d -----------------------------------------------------
def _l1_distance(L):
    return lambda a, b: (a - b).abs().sum(-1)


@pytest.mark.parametrize("make", [
    lambda L: L.nn.TripletMarginWithDistanceLoss(),
    lambda L: L.nn.TripletMarginWithDistanceLoss(margin=0.5, swap=True, reduction="sum"),
    lambda L: L.nn.TripletMarginWithDistanceLoss(distance_function=L.nn.PairwiseDistance(p=1.5), reduction="none"),
    lambda L: L.nn.TripletMarginWithDistanceLoss(distance_function=_l1_distance(L), swap=True),
    lambda L: L.nn.TripletMarginWithDistanceLoss(distance_function=L.nn.CosineSimilarity(), margin=2.0),
])
def test_triplet_margin_with_distance_loss_matches_torch(make):
    km, tm = make(kiln), make(torch)
    assert repr(km) == repr(tm)
    ks, ts = zip(*(inputs((5, 4), seed=s) for s in range(3)))
    kout, tout = km(*ks), tm(*ts)
    close(kout, tout)
    backward_same(kout, tout)
    for kx, tx in zip(ks, ts):
        close(kx.grad, tx.grad)


def test_triplet_margin_with_distance_loss_errors_and_children():
    assert_same_error(lambda: kiln.nn.TripletMarginWithDistanceLoss(margin=0),
                      lambda: torch.nn.TripletMarginWithDistanceLoss(margin=0))
    assert_same_error(lambda: kiln.nn.TripletMarginWithDistanceLoss(margin=-1.0),
                      lambda: torch.nn.TripletMarginWithDistanceLoss(margin=-1.0))
    km = kiln.nn.TripletMarginWithDistanceLoss(distance_function=kiln.nn.PairwiseDistance())
    assert list(dict(km.named_children())) == ["distance_function"]
    assert repr(kiln.nn.TripletMarginWithDistanceLoss(distance_function=kiln.nn.functional.pairwise_distance)) == \
        "TripletMarginWithDistanceLoss()"


def test_nll_loss_2d_warns_and_matches_torch():
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        km = kiln.nn.NLLLoss2d(ignore_index=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tm = torch.nn.NLLLoss2d(ignore_index=1)
    assert isinstance(km, kiln.nn.NLLLoss) and repr(km) == repr(tm)
    kx, tx = inputs((2, 3, 4, 5))
    target = torch.tensor(np.random.default_rng(2).integers(0, 3, (2, 4, 5)))
    kout, tout = km(kx.log_softmax(1), K(target)), tm(tx.log_softmax(1), target)
    close(kout, tout)
    kout.backward()
    tout.backward()
    close(kx.grad, tx.grad)


# --- AdaptiveLogSoftmaxWithLoss -------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors:UserWarning")  # 8 // 4**2 == 0 features
@pytest.mark.parametrize("kwargs", [{"cutoffs": [3, 6]}, {"cutoffs": (2, 5, 8), "div_value": 2.0, "head_bias": True}])
def test_adaptive_log_softmax_matches_torch(kwargs):
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, **kwargs).double()
    km = kiln.nn.AdaptiveLogSoftmaxWithLoss(8, 10, **kwargs).double()
    assert repr(km) == repr(tm)
    copy_params(km, tm)
    for name in ("in_features", "n_classes", "cutoffs", "div_value", "head_bias", "shortlist_size", "n_clusters",
                 "head_size"):
        assert getattr(km, name) == getattr(tm, name), name
    kx, tx = inputs((7, 8))
    target = torch.tensor([0, 9, 4, 2, 7, 5, 3])
    kres, tres = km(kx, K(target)), tm(tx, target)
    assert type(kres).__name__ == "_ASMoutput" and kres._fields == ("output", "loss")
    close(kres.output, tres.output)
    close(kres.loss, tres.loss)
    (kres.loss + kres.output.sum() * 0.3).backward()
    (tres.loss + tres.output.sum() * 0.3).backward()
    close(kx.grad, tx.grad)
    compare_grads(km, tm)
    with torch.no_grad():
        close(km.log_prob(kx.detach()), tm.log_prob(tx.detach()))
        close(km.predict(kx.detach()), tm.predict(tx.detach()))
        # predict's three paths: all rows in the shortlist, none, some
        tm.head.weight[:, :] = 0
        tm.head.weight[0, 0] = 5.0
        copy_params(km, tm)
        close(km.predict(kx.detach()), tm.predict(tx.detach()))
        tm.head.weight[:, :] = 0
        tm.head.weight[-1, :] = 5.0
        copy_params(km, tm)
        close(km.predict(kx.detach().abs()), tm.predict(tx.detach().abs()))


@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors:UserWarning")
def test_adaptive_log_softmax_unbatched_empty_and_errors():
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6]).double()
    km = kiln.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6]).double()
    copy_params(km, tm)
    kx, tx = inputs((8,), grad=False)
    kres, tres = km(kx, K(torch.tensor(7))), tm(tx, torch.tensor(7))
    close(kres.output, tres.output)
    close(kres.loss, tres.loss)
    kres = km(kiln.zeros(0, 8, dtype=kiln.float64), kiln.zeros(0, dtype=kiln.int64))
    assert tuple(kres.output.shape) == (0,) and np.isnan(float(kres.loss))
    kx, tx = inputs((4, 8), grad=False)
    for target in ([0, 1, 2], [0, 1, 2, 10], [-1, 2, 3, 4]):
        assert_same_error(lambda: km(kx, kiln.tensor(target)), lambda: tm(tx, torch.tensor(target)))
    assert_same_error(lambda: km(kx, kiln.zeros(4, 2, dtype=kiln.int64)), lambda: tm(tx, torch.zeros(4, 2).long()))
    assert_same_error(lambda: km(kiln.zeros(8, dtype=kiln.float64), kiln.tensor([0, 1])),
                      lambda: tm(torch.zeros(8).double(), torch.tensor([0, 1])))
    for cutoffs in ([], [3, 3], [6, 3], [0, 3], [3, 10], [3.5]):
        assert_same_error(lambda: kiln.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs),
                          lambda: torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zero-element tail weights, in both
        assert repr(kiln.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=8.0)) == \
            repr(torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=8.0))


# --- CrossMapLRN2d ----------------------------------------------------------------------------------
@pytest.mark.parametrize("channels", [1, 3, 6])
@pytest.mark.parametrize("size", [2, 3, 4, 5, 7])
def test_cross_map_lrn2d_matches_torch(channels, size):
    km, tm = kiln.nn.CrossMapLRN2d(size, alpha=0.1, beta=0.6, k=2), torch.nn.CrossMapLRN2d(size, 0.1, 0.6, 2)
    assert repr(km) == repr(tm)
    kx, tx = inputs((2, channels, 3, 4), seed=size)
    kout, tout = km(kx), tm(tx)
    close(kout, tout)
    backward_same(kout, tout)
    close(kx.grad, tx.grad)


def test_cross_map_lrn2d_errors():
    assert_same_error(lambda: kiln.nn.CrossMapLRN2d(3)(kiln.randn(2, 3, 4)),
                      lambda: torch.nn.CrossMapLRN2d(3)(torch.randn(2, 3, 4)))
    kx, tx = inputs((1, 4, 2, 2))
    assert_same_error(lambda: kiln.nn.CrossMapLRN2d(1)(kx).sum().backward(),
                      lambda: torch.nn.CrossMapLRN2d(1)(tx).sum().backward())
    assert repr(kiln.nn.CrossMapLRN2d(3)) == repr(torch.nn.CrossMapLRN2d(3)) == \
        "CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=1)"


# --- Container, factory_kwargs, DataParallel ----------------------------------------------------------
def test_container_warns_and_registers_children():
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        kc = kiln.nn.Container(a=kiln.nn.Linear(1, 2), b=kiln.nn.ReLU())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tc = torch.nn.Container(a=torch.nn.Linear(1, 2), b=torch.nn.ReLU())
    assert repr(kc) == repr(tc)
    assert list(kc.state_dict()) == list(tc.state_dict())


def test_factory_kwargs_matches_torch():
    assert kiln.nn.factory_kwargs(None) == {}
    assert kiln.nn.factory_kwargs({"device": "cpu", "dtype": kiln.float64}) == {"device": "cpu", "dtype": kiln.float64}
    assert kiln.nn.factory_kwargs({"factory_kwargs": {"dtype": kiln.float16}, "memory_format": 1}) == \
        {"dtype": kiln.float16, "memory_format": 1}
    for kwargs in ({"foo": 1}, {"dtype": 1, "factory_kwargs": {"dtype": 2}}):
        assert_same_error(lambda: kiln.nn.factory_kwargs(kwargs), lambda: torch.nn.factory_kwargs(kwargs))
    nested = {"factory_kwargs": {"bar": 1}}
    assert kiln.nn.factory_kwargs(nested) == torch.nn.factory_kwargs(nested) == {"bar": 1}


def test_data_parallel_without_devices_runs_the_module():
    tm = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh()).double()
    km = kiln.nn.Sequential(kiln.nn.Linear(3, 2), kiln.nn.Tanh()).double()
    copy_params(km, tm)
    kdp, tdp = kiln.nn.DataParallel(km), torch.nn.DataParallel(tm)
    assert repr(kdp) == repr(tdp)
    assert kdp.device_ids == tdp.device_ids == []
    assert list(kdp.state_dict()) == list(tdp.state_dict()) == ["module.0.weight", "module.0.bias"]
    assert kdp.module is km
    kx, tx = inputs((4, 3))
    kout, tout = kdp(kx), tdp(tx)
    close(kout, tout)
    backward_same(kout, tout)
    close(kx.grad, tx.grad)
    assert not hasattr(kdp, "output_device") and not hasattr(tdp, "output_device")


# --- SyncBatchNorm ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 4), (2, 3, 2, 2, 3)])
@pytest.mark.parametrize("kwargs", [{}, {"momentum": None}, {"affine": False}, {"track_running_stats": False},
                                    {"bias": False}])
def test_sync_batch_norm_is_batch_norm_on_cpu(shape, kwargs):
    tm = torch.nn.SyncBatchNorm(3, **kwargs).double()
    km = kiln.nn.SyncBatchNorm(3, **kwargs).double()
    assert repr(km) == repr(tm)
    assert list(km.state_dict()) == list(tm.state_dict())
    assert km.process_group is None
    for step in range(2):
        kx, tx = inputs(shape, seed=step)
        kout, tout = km(kx), tm(tx)
        close(kout, tout)
        backward_same(kout, tout)
        close(kx.grad, tx.grad)
    compare_grads(km, tm)
    for name, tb in tm.named_buffers():
        close(dict(km.named_buffers())[name], tb)
    km.eval()
    tm.eval()
    kx, tx = inputs(shape, seed=5, grad=False)
    close(km(kx), tm(tx))


def test_sync_batch_norm_errors():
    for shape in ((3,), (1, 3), (4, 0, 2)):
        nf = 0 if shape == (4, 0, 2) else 3
        assert_same_error(lambda: kiln.nn.SyncBatchNorm(nf)(kiln.zeros(*shape)),
                          lambda: torch.nn.SyncBatchNorm(nf)(torch.zeros(*shape)), message=shape != (1, 3))
    km, tm = kiln.nn.SyncBatchNorm(3).eval(), torch.nn.SyncBatchNorm(3).eval()
    close(km(kiln.ones(1, 3)), tm(torch.ones(1, 3)))  # one value per channel is fine outside training


def test_convert_sync_batchnorm_matches_torch():
    def build(L):
        inner = L.nn.Sequential(L.nn.BatchNorm1d(3, momentum=0.3, bias=False), L.nn.InstanceNorm1d(3))
        return L.nn.Sequential(L.nn.Conv2d(3, 3, 1), L.nn.BatchNorm2d(3, eps=1e-3), inner,
                               L.nn.BatchNorm3d(3, affine=False, track_running_stats=False))

    kseq, tseq = build(kiln), build(torch)
    tseq[1].running_mean.fill_(2.0)
    tseq[1].num_batches_tracked.fill_(4)
    tseq[2][0].eval()
    copy_params(kseq, tseq)
    kseq[2][0].eval()
    kbn, tbn = kseq[1], tseq[1]
    kout = kiln.nn.SyncBatchNorm.convert_sync_batchnorm(kseq)
    tout = torch.nn.SyncBatchNorm.convert_sync_batchnorm(tseq)
    assert repr(kout) == repr(tout)
    assert list(kout.state_dict()) == list(tout.state_dict())
    assert kout[1].weight is kbn.weight and kout[1].running_mean is kbn.running_mean
    assert kout[2][0].training is False and kout[2][0].bias is None
    assert type(kout[2][1]).__name__ == "InstanceNorm1d"
    close(kout[1].num_batches_tracked, tout[1].num_batches_tracked)
    lone = kiln.nn.BatchNorm1d(2)
    assert type(kiln.nn.SyncBatchNorm.convert_sync_batchnorm(lone)).__name__ == "SyncBatchNorm"
    relu = kiln.nn.ReLU()
    assert kiln.nn.SyncBatchNorm.convert_sync_batchnorm(relu) is relu


# --- Buffer ----------------------------------------------------------------------------------------------
def test_buffer_is_a_marked_detached_tensor():
    t = kiln.ones(2, requires_grad=True)
    b = kiln.nn.Buffer(t)
    tb = torch.nn.Buffer(torch.ones(2, requires_grad=True))
    assert type(b) is kiln.Tensor and type(tb) is torch.Tensor
    assert b is not t and b.requires_grad and b.grad_fn is None
    assert b.persistent is True and kiln.nn.Buffer(kiln.ones(1), persistent=False).persistent is False
    assert isinstance(b, kiln.nn.Buffer) and not isinstance(t, kiln.nn.Buffer)
    assert not isinstance(kiln.nn.Parameter(kiln.ones(1)), kiln.nn.Buffer)
    assert tuple(kiln.nn.Buffer().shape) == tuple(torch.nn.Buffer().shape) == (0,)
    assert_same_error(lambda: kiln.nn.Buffer(3), lambda: torch.nn.Buffer(3))


def test_module_registers_an_assigned_buffer():
    results = []
    for L in (kiln, torch):
        m = L.nn.Module()
        m.x = L.nn.Buffer(L.ones(2))
        m.y = L.nn.Buffer(L.zeros(1), persistent=False)
        first = (sorted(m._buffers), sorted(m._non_persistent_buffers_set), list(m.state_dict()))
        m.x = L.zeros(3)  # a plain tensor keeps the buffer's persistence
        second = sorted(m._non_persistent_buffers_set)
        m.x = L.nn.Buffer(L.ones(1), persistent=False)  # a Buffer brings its own
        third = sorted(m._non_persistent_buffers_set)
        m.register_buffer("z", L.nn.Buffer(L.ones(1)), persistent=False)
        results.append((first, second, third, sorted(m._non_persistent_buffers_set), list(m.state_dict())))
    assert results[0] == results[1]

    def assign_to(L, existing):
        m = L.nn.Module()
        if existing == "param":
            m.p = L.nn.Parameter(L.ones(1))
        else:
            m.p = L.ones(1)
        m.p = L.nn.Buffer(L.ones(1))

    for existing in ("param", "attr"):  # (kiln's typename is 'kiln.Tensor' where torch's is 'torch.FloatTensor')
        assert_same_error(lambda: assign_to(kiln, existing), lambda: assign_to(torch, existing),
                          message=existing == "attr")

    def before_init(L):
        class N(L.nn.Module):
            def __init__(self):
                self.b = L.nn.Buffer(L.ones(1))

        N()

    assert_same_error(lambda: before_init(kiln), lambda: before_init(torch))


# --- UninitializedParameter / UninitializedBuffer ---------------------------------------------------------------
def test_uninitialized_tensors_repr_flags_and_materialize():
    for L in (kiln, torch):
        p = L.nn.UninitializedParameter()
        b = L.nn.UninitializedBuffer()
        assert (repr(p), str(p), repr(b)) == ("<UninitializedParameter>", "<UninitializedParameter>",
                                              "<UninitializedBuffer>")
        assert p.requires_grad and not b.requires_grad and b.persistent
        assert L.nn.parameter.is_lazy(p) and L.nn.parameter.is_lazy(b) and not L.nn.parameter.is_lazy(L.zeros(1))
        assert isinstance(p, L.nn.Parameter) and isinstance(b, L.nn.Buffer)
        assert tuple(p.size()) == (0,) and p.is_floating_point()
        p.materialize((2, 3))
        b.materialize(4)
        assert type(p) is L.nn.Parameter and tuple(p.shape) == (2, 3) and p.requires_grad
        assert type(b) is L.Tensor and tuple(b.shape) == (4,)
        q = L.nn.UninitializedParameter(requires_grad=False, dtype=L.float64)
        assert q.dtype == L.float64 and not q.requires_grad
        q.materialize([3])
        assert q.dtype == L.float64 and not q.requires_grad and type(q) is L.nn.Parameter


@pytest.mark.parametrize("use", ["p + 1", "p * 2", "p.sum()", "len(p)", "p[0]", "p.view(-1)", "p.clone()",
                                 "p.detach()", "p.numel()", "p.dim()", "p.requires_grad_(False)", "p.zero_()",
                                 "p == p", "bool(p)", "p.tolist()"])
def test_using_an_uninitialized_parameter_raises(use):
    kerr = raised(lambda: eval(use, {"p": kiln.nn.UninitializedParameter()}))
    terr = raised(lambda: eval(use, {"p": torch.nn.UninitializedParameter()}))
    assert type(kerr) is type(terr) is ValueError, (kerr, terr)
    assert str(kerr).startswith("Attempted to use an uninitialized parameter in <method '")
    assert str(kerr).split(">. ", 1)[1] == as_kiln_text(str(terr).split(">. ", 1)[1])


def test_uninitialized_shape_deepcopy_pickle_and_dtype_limit():
    assert_same_error(lambda: kiln.nn.UninitializedParameter().shape, lambda: torch.nn.UninitializedParameter().shape)
    p = kiln.nn.UninitializedParameter(requires_grad=False, dtype=kiln.float64)
    for q in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert type(q) is kiln.nn.UninitializedParameter and q is not p
        assert q.dtype == kiln.float64 and not q.requires_grad
    b = pickle.loads(pickle.dumps(kiln.nn.UninitializedBuffer(persistent=False)))
    assert type(b) is kiln.nn.UninitializedBuffer and b.persistent is False
    with pytest.raises(NotImplementedError, match="dtype"):  # knowing difference: no in-place dtype change
        kiln.nn.UninitializedParameter().materialize((2,), dtype=kiln.float64)


# --- lazy modules ---------------------------------------------------------------------------------------------------
LAZY_CASES = [
    ("LazyLinear", (3,), {}, (2, 5)),
    ("LazyLinear", (4,), {"bias": False}, (2, 3, 6)),
    ("LazyLinear", (2,), {}, (5,)),
    ("LazyConv1d", (4, 3), {"padding": 1}, (2, 3, 7)),
    ("LazyConv1d", (4, 3), {"padding_mode": "reflect", "padding": 1}, (3, 6)),
    ("LazyConv2d", (4, 3), {"groups": 2, "bias": False}, (2, 2, 5, 5)),
    ("LazyConv2d", (2, (2, 3)), {"stride": 2, "dilation": 1}, (3, 6, 7)),
    ("LazyConv3d", (2, 2), {}, (1, 3, 4, 4, 3)),
    ("LazyConvTranspose1d", (4, 3), {"stride": 2}, (2, 3, 5)),
    ("LazyConvTranspose2d", (4, 3), {"stride": 2, "output_padding": 1, "groups": 2}, (1, 2, 4, 4)),
    ("LazyConvTranspose3d", (2, 2), {"bias": False}, (1, 3, 3, 3, 2)),
    ("LazyBatchNorm1d", (), {}, (4, 3)),
    ("LazyBatchNorm1d", (), {"affine": False, "momentum": None}, (4, 3, 5)),
    ("LazyBatchNorm2d", (), {"track_running_stats": False}, (2, 3, 4, 4)),
    ("LazyBatchNorm2d", (), {"bias": False, "eps": 1e-3}, (2, 3, 4, 4)),
    ("LazyBatchNorm3d", (), {}, (2, 2, 3, 3, 3)),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 6)),
    ("LazyInstanceNorm2d", (), {"affine": False}, (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), {"track_running_stats": False, "bias": False}, (2, 2, 3, 3, 3)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", LAZY_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(LAZY_CASES)])
def test_lazy_module_matches_torch(name, args, kwargs, shape):
    km = getattr(kiln.nn, name)(*args, **kwargs)
    tm = getattr(torch.nn, name)(*args, **kwargs)
    assert repr(km) == repr(tm)
    assert {k: repr(v) for k, v in km.state_dict().items()} == {k: repr(v) for k, v in tm.state_dict().items()}
    assert [repr(p) for p in km.parameters()] == [repr(p) for p in tm.parameters()]
    assert km.has_uninitialized_params() == tm.has_uninitialized_params()
    kx, tx = inputs(shape, grad=False, dtype=torch.float32)
    km(kx), tm(tx)
    concrete = name.removeprefix("Lazy")
    assert type(km) is getattr(kiln.nn, concrete) and type(tm) is getattr(torch.nn, concrete)
    assert repr(km) == repr(tm)
    assert [(n, tuple(p.shape), type(p).__name__) for n, p in km.named_parameters()] == \
        [(n, tuple(p.shape), type(p).__name__) for n, p in tm.named_parameters()]
    assert [(n, tuple(b.shape)) for n, b in km.named_buffers()] == [(n, tuple(b.shape)) for n, b in tm.named_buffers()]
    assert not km._forward_pre_hooks and not hasattr(km, "_initialize_hook")
    # deterministic inits (norm weights, running statistics) agree as they are
    if "Norm" in name:
        for (n, kb), (_, tb) in zip(km.state_dict().items(), tm.state_dict().items()):
            close(kb, tb)
    copy_params(km, tm)
    kx, tx = inputs(shape, seed=4, dtype=torch.float32)
    kout, tout = km(kx), tm(tx)
    close(kout, tout, rtol=1e-5, atol=1e-5)
    backward_same(kout, tout)
    close(kx.grad, tx.grad, rtol=1e-5, atol=1e-5)
    compare_grads(km, tm)


def test_lazy_linear_initialisation_distribution():
    m = kiln.nn.LazyLinear(50)
    m(kiln.zeros(3, 40))
    bound = 1 / np.sqrt(40)  # kaiming_uniform(a=sqrt(5)) and the bias both give U(-1/sqrt(in), 1/sqrt(in))
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(b).max() <= bound and abs(w.mean()) < 0.1 * bound


def test_lazy_load_state_dict_materializes_and_stays_lazy():
    results = []
    for L in (kiln, torch):
        src = L.nn.Linear(5, 3)
        m = L.nn.LazyLinear(3)
        m.load_state_dict(src.state_dict())
        state = (type(m).__name__, type(m.weight).__name__, tuple(m.weight.shape), m.in_features)
        m(L.zeros(2, 5))
        results.append(state + (type(m).__name__, m.in_features))
        assert float((m.weight - src.weight).detach().abs().max()) == 0
    assert results[0] == results[1] == ("LazyLinear", "Parameter", (3, 5), 0, "Linear", 5)
    assert_same_error(lambda: load_then_call(kiln), lambda: load_then_call(torch))
    bn = kiln.nn.LazyBatchNorm1d()
    src = kiln.nn.BatchNorm1d(4)
    src.running_mean.fill_(2.0)
    bn.load_state_dict(src.state_dict())
    assert tuple(bn.running_mean.shape) == (4,) and float(bn.running_mean.sum()) == 8.0
    lazy_into_lazy = kiln.nn.LazyLinear(3).load_state_dict(kiln.nn.LazyLinear(3).state_dict())
    assert lazy_into_lazy.missing_keys == [] and lazy_into_lazy.unexpected_keys == []


def load_then_call(L):
    m = L.nn.LazyLinear(3)
    m.load_state_dict(L.nn.Linear(5, 3).state_dict())
    m(L.zeros(2, 4))


def test_lazy_state_dict_into_initialized_module_errors_like_torch():
    assert_same_error(lambda: kiln.nn.Linear(2, 3).load_state_dict(kiln.nn.LazyLinear(3).state_dict()),
                      lambda: torch.nn.Linear(2, 3).load_state_dict(torch.nn.LazyLinear(3).state_dict()))


def test_lazy_dtype_moves_copies_and_pickles():
    m = kiln.nn.LazyLinear(3).double()
    assert type(m.weight).__name__ == "UninitializedParameter" and m.weight.dtype == kiln.float64
    m(kiln.zeros(2, 4, dtype=kiln.float64))
    assert m.weight.dtype == kiln.float64 and tuple(m.weight.shape) == (3, 4)
    b = kiln.nn.LazyBatchNorm1d().double()
    assert b.running_mean.dtype == kiln.float64 and b.num_batches_tracked.dtype == kiln.int64
    lazy = kiln.nn.LazyConv2d(2, 3)
    twin = copy.deepcopy(lazy)
    twin(kiln.zeros(1, 4, 5, 5))
    assert type(twin).__name__ == "Conv2d" and type(lazy).__name__ == "LazyConv2d"
    assert type(lazy.weight).__name__ == "UninitializedParameter"
    restored = pickle.loads(pickle.dumps(kiln.nn.LazyLinear(3)))
    assert tuple(restored(kiln.zeros(2, 6)).shape) == (2, 3) and type(restored).__name__ == "Linear"
    lazy_dtype = kiln.nn.LazyLinear(3, dtype=kiln.float64)
    lazy_dtype(kiln.zeros(1, 2, dtype=kiln.float64))
    assert lazy_dtype.weight.dtype == kiln.float64


def test_lazy_errors_match_torch():
    assert_same_error(lambda: kiln.nn.LazyConv2d(4, 3, groups=2)(kiln.zeros(2, 3, 5, 5)),
                      lambda: torch.nn.LazyConv2d(4, 3, groups=2)(torch.zeros(2, 3, 5, 5)))
    err = assert_same_error(lambda: kiln.nn.LazyConv2d(4, 3)(kiln.zeros(5, 5)),
                            lambda: torch.nn.LazyConv2d(4, 3)(torch.zeros(5, 5)), message=False)
    assert str(err) == "Expected 3D (unbatched) or 4D (batched) input to LazyConv2d, but got input of size: " \
                       "kiln.Size([5, 5])"
    assert_same_error(lambda: kiln.nn.LazyLinear(3)(kiln.zeros(2, 5), kiln.zeros(1)),
                      lambda: torch.nn.LazyLinear(3)(torch.zeros(2, 5), torch.zeros(1)), message=False)
    km, tm = kiln.nn.LazyBatchNorm1d(), torch.nn.LazyBatchNorm1d()
    assert_same_error(lambda: km(kiln.zeros(2, 3, 4, 5)), lambda: tm(torch.zeros(2, 3, 4, 5)))
    assert type(km).__name__ == type(tm).__name__ == "BatchNorm1d"  # initialised before the input check, as torch
    for L in (kiln, torch):
        with pytest.raises(RuntimeError, match="module LazyHalf has not been fully initialized"):
            half(L)(L.zeros(2, 3))
        with pytest.raises(NotImplementedError, match="initialize_parameters is not implemented for Bare"):
            bare(L)(L.zeros(1))


def half(L):
    class LazyHalf(L.nn.modules.lazy.LazyModuleMixin, L.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = L.nn.UninitializedParameter()
            self.b = L.nn.UninitializedParameter()

        def initialize_parameters(self, x):
            self.a.materialize(x.shape)

        def forward(self, x):
            return x

    return LazyHalf()


def bare(L):
    class Bare(L.nn.modules.lazy.LazyModuleMixin, L.nn.Module):
        def forward(self, x):
            return x

    return Bare()


def test_lazy_module_in_a_model_trains_like_torch():
    def build(L):
        return L.nn.Sequential(L.nn.LazyConv2d(4, 3, padding=1), L.nn.LazyBatchNorm2d(), L.nn.ReLU(),
                               L.nn.Flatten(), L.nn.LazyLinear(2))

    kmodel, tmodel = build(kiln), build(torch)
    kx, tx = inputs((3, 2, 5, 5), grad=False, dtype=torch.float32)
    kmodel(kx), tmodel(tx)
    assert [type(m).__name__ for m in kmodel] == ["Conv2d", "BatchNorm2d", "ReLU", "Flatten", "Linear"]
    copy_params(kmodel, tmodel)
    kopt, topt = kiln.optim.SGD(kmodel.parameters(), lr=0.05), torch.optim.SGD(tmodel.parameters(), lr=0.05)
    for _ in range(3):
        kopt.zero_grad()
        topt.zero_grad()
        kloss, tloss = (kmodel(kx) ** 2).mean(), (tmodel(tx) ** 2).mean()
        close(kloss, tloss, rtol=1e-5, atol=1e-6)
        kloss.backward()
        tloss.backward()
        kopt.step()
        topt.step()
