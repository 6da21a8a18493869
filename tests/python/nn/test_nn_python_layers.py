"""The layers and functional ops kiln composes in Python (kiln/nn/_shuffles.py, kiln/nn/_activations.py,
modules/padding.py, modules/reshaping.py, PReLU/Hardshrink/Softshrink,
InstanceNorm1d/2d/3d, BatchNorm3d) against torch: outputs, gradients,
running statistics, errors and reprs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_matches, assert_same_failure
from torch_compare import raised


def _data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _run(make, forward, arrays, grad=True):
    """forward(L, module, *inputs) on both libraries; compares outputs and input gradients."""
    results = []
    for L in (kiln, torch):
        xs = [L.tensor(a, dtype=L.float64, requires_grad=grad) for a in arrays]
        module = make(L)
        if hasattr(module, "double"):
            module = module.double()
        out = forward(L, module, *xs)
        grads = L.autograd.grad((out * L.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))).sum(),
                                xs) if grad else []
        results.append((out, grads, module))
    (kout, kgrads, kmod), (tout, tgrads, tmod) = results
    assert_matches(kout, tout)
    for kg, tg in zip(kgrads, tgrads):
        assert_matches(kg, tg)
    assert repr(kmod) == repr(tmod)
    return kmod, tmod


PAD_CASES = [("ConstantPad1d", (2, 3.5), (2, 3, 5)), ("ConstantPad2d", ((1, 0, 2, 1), -1.0), (2, 3, 4, 5)),
             ("ConstantPad3d", (1, 0.5), (1, 2, 3, 3, 3)), ("ZeroPad1d", ((1, 2),), (2, 3, 5)),
             ("ZeroPad2d", (2,), (1, 4, 4)), ("ZeroPad3d", ((1, 0, 0, 1, 1, 1),), (1, 1, 2, 3, 3)),
             ("ReflectionPad1d", (2,), (2, 3, 5)), ("ReflectionPad2d", ((1, 2, 0, 1),), (2, 3, 4, 5)),
             ("ReplicationPad1d", ((3, 1),), (2, 3, 5)), ("ReplicationPad2d", (2,), (1, 2, 3, 4)),
             ("CircularPad1d", (2,), (2, 3, 5)), ("CircularPad2d", ((1, 2, 2, 0),), (1, 2, 3, 4))]


@pytest.mark.parametrize("name, args, shape", PAD_CASES, ids=[c[0] + str(i) for i, c in enumerate(PAD_CASES)])
def test_padding_layers_match_torch(name, args, shape):
    _run(lambda L: getattr(L.nn, name)(*args), lambda L, m, x: m(x), [_data(shape)])


@pytest.mark.parametrize("r", [1, 2, 3])
def test_pixel_shuffle_unshuffle_and_channel_shuffle(r):
    _run(lambda L: L.nn.PixelShuffle(r), lambda L, m, x: m(x), [_data((2, 2 * r * r, 3, 4))])
    _run(lambda L: L.nn.PixelShuffle(r), lambda L, m, x: m(x), [_data((r * r, 2, 3))])
    _run(lambda L: L.nn.PixelUnshuffle(r), lambda L, m, x: m(x), [_data((2, 3, 2 * r, 3 * r))])
    _run(lambda L: L.nn.ChannelShuffle(2), lambda L, m, x: m(x), [_data((2, 6, 3, 2))], grad=False)


@pytest.mark.parametrize("kwargs", [{"scale_factor": 2}, {"size": (5, 7)}, {"scale_factor": 2, "mode": "bilinear"},
                                    {"size": 6, "mode": "bilinear", "align_corners": True}])
def test_upsample_matches_torch(kwargs):
    _run(lambda L: L.nn.Upsample(**kwargs), lambda L, m, x: m(x), [_data((1, 2, 3, 4))])
    _run(lambda L: L.nn.UpsamplingNearest2d(scale_factor=2), lambda L, m, x: m(x), [_data((1, 2, 3, 4))])
    _run(lambda L: L.nn.UpsamplingBilinear2d(size=(4, 5)), lambda L, m, x: m(x), [_data((1, 2, 3, 4))])


def test_prelu_shrinks_and_distances():
    _run(lambda L: L.nn.PReLU(), lambda L, m, x: m(x), [_data((3, 4))])
    _run(lambda L: L.nn.PReLU(4, init=0.1), lambda L, m, x: m(x), [_data((2, 4, 3))])
    for name in ("Hardshrink", "Softshrink"):
        _run(lambda L: getattr(L.nn, name)(), lambda L, m, x: m(x), [_data((3, 5))])
        _run(lambda L: getattr(L.nn, name)(0.8), lambda L, m, x: m(x), [_data((3, 5), 1)])
    _run(lambda L: L.nn.CosineSimilarity(dim=1), lambda L, m, a, b: m(a, b), [_data((3, 4)), _data((3, 4), 1)])
    _run(lambda L: L.nn.PairwiseDistance(p=1.5), lambda L, m, a, b: m(a, b), [_data((3, 4)), _data((3, 4), 1)])


def test_prelu_weight_gradient_matches_torch():
    grads = []
    for L in (kiln, torch):
        m = L.nn.PReLU(3).double()
        x = L.tensor(_data((2, 3, 4)), dtype=L.float64)
        m(x).sum().backward()
        grads.append(m.weight.grad)
    assert_matches(grads[0], grads[1])


@pytest.mark.parametrize("name, shape", [("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm2d", (2, 3, 4, 5)),
                                         ("InstanceNorm3d", (2, 3, 2, 3, 4)), ("InstanceNorm1d", (3, 5))])
@pytest.mark.parametrize("kwargs", [{}, {"affine": True}, {"track_running_stats": True}])
def test_instance_norm_matches_torch(name, shape, kwargs):
    kmod, tmod = _run(lambda L: getattr(L.nn, name)(3, **kwargs), lambda L, m, x: m(x), [_data(shape)])
    if kwargs.get("track_running_stats"):
        assert_matches(kmod.running_mean, tmod.running_mean)
        assert_matches(kmod.running_var, tmod.running_var)
        kmod.eval()
        tmod.eval()
        x = _data(shape, 3)
        assert_matches(kmod(kiln.tensor(x)), tmod(torch.tensor(x)))


def test_batch_norm_3d_matches_torch():
    _run(lambda L: L.nn.BatchNorm3d(3), lambda L, m, x: m(x), [_data((2, 3, 2, 2, 3))])


ERRORS = [
    ("pixel_shuffle_channels", lambda L: L.nn.functional.pixel_shuffle(L.ones(1, 3, 2, 2), 2)),
    ("pixel_shuffle_dims", lambda L: L.nn.functional.pixel_shuffle(L.ones(4, 2), 2)),
    ("pixel_unshuffle_height", lambda L: L.nn.functional.pixel_unshuffle(L.ones(1, 1, 3, 4), 2)),
    ("prelu_channels", lambda L: L.nn.functional.prelu(L.ones(2, 3), L.ones(2))),
    ("softshrink_negative", lambda L: L.nn.functional.softshrink(L.ones(2), -1.0)),
    ("instance_norm_dims", lambda L: L.nn.InstanceNorm2d(3)(L.ones(3, 4))),
    ("batch_norm_3d_dims", lambda L: L.nn.BatchNorm3d(3)(L.ones(2, 3, 4))),
]


@pytest.mark.parametrize("name, fn", ERRORS, ids=[n for n, _ in ERRORS])
def test_errors_match_torch(name, fn):
    assert_same_failure(raised(lambda: fn(kiln)), raised(lambda: fn(torch)))


# --- transposed convolutions ------------------------------------------------------------------------

def _same_module(kmod, tmod):
    for name, tp in tmod.named_parameters():
        getattr(kmod, name).data.copy_(kiln.from_numpy(tp.detach().numpy().copy()))


TRANSPOSE_CASES = [
    ("ConvTranspose2d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}, (2, 4, 5, 6)),
    ("ConvTranspose2d", (3, 2, (2, 3)), {"dilation": 2, "bias": False}, (1, 3, 4, 4)),
    ("ConvTranspose2d", (2, 4, 3), {"stride": 3, "padding": 2, "output_padding": 2}, (2, 3, 3)),
    ("ConvTranspose1d", (4, 3, 4), {"stride": 2, "padding": 1}, (2, 4, 7)),
    ("ConvTranspose1d", (2, 4, 3), {"groups": 2, "dilation": 3, "output_padding": 1, "stride": 2}, (2, 6)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", TRANSPOSE_CASES)
def test_conv_transpose_matches_torch_with_gradients(name, args, kwargs, shape):
    tmod = getattr(torch.nn, name)(*args, **kwargs).double()
    kmod = getattr(kiln.nn, name)(*args, **kwargs).double()
    assert repr(kmod) == repr(tmod)
    assert tuple(kmod.weight.shape) == tuple(tmod.weight.shape)
    _same_module(kmod, tmod)
    x = _data(shape)
    kx, tx = kiln.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    kout, tout = kmod(kx), tmod(tx)
    assert_matches(kout, tout)
    seed = np.cos(np.arange(tout.numel())).reshape(tuple(tout.shape))
    (kout * kiln.tensor(seed)).sum().backward()
    (tout * torch.tensor(seed)).sum().backward()
    assert_matches(kx.grad, tx.grad)
    for (_, kp), (_, tp) in zip(kmod.named_parameters(), tmod.named_parameters()):
        assert_matches(kp.grad, tp.grad)


def test_conv_transpose_output_size_and_gradcheck():
    tmod, kmod = torch.nn.ConvTranspose2d(2, 3, 3, stride=2).double(), kiln.nn.ConvTranspose2d(2, 3, 3, stride=2).double()
    _same_module(kmod, tmod)
    x = _data((1, 2, 4, 4))
    assert_matches(kmod(kiln.tensor(x), output_size=[10, 10]), tmod(torch.tensor(x), output_size=[10, 10]))
    assert_same_failure(raised(lambda: kmod(kiln.tensor(x), output_size=[12, 12])),
                        raised(lambda: tmod(torch.tensor(x), output_size=[12, 12])), message=False)
    w = kiln.tensor(_data((2, 3, 2, 2), 1), requires_grad=True)
    xs = kiln.tensor(_data((1, 2, 3, 3), 2), requires_grad=True)
    assert kiln.autograd.gradcheck(lambda a, b: kiln.nn.functional.conv_transpose2d(a, b, stride=2, padding=1), (xs, w))


def test_conv_transpose_errors_match_torch():
    F_k, F_t = kiln.nn.functional, torch.nn.functional
    assert_same_failure(raised(lambda: F_k.conv_transpose2d(kiln.ones(1, 3, 4, 4), kiln.ones(2, 3, 3, 3))),
                        raised(lambda: F_t.conv_transpose2d(torch.ones(1, 3, 4, 4), torch.ones(2, 3, 3, 3))),
                        message=False)
    assert_same_failure(raised(lambda: F_k.conv_transpose2d(kiln.ones(1, 2, 4, 4), kiln.ones(2, 3, 3, 3), stride=2,
                                                            output_padding=2)),
                        raised(lambda: F_t.conv_transpose2d(torch.ones(1, 2, 4, 4), torch.ones(2, 3, 3, 3), stride=2,
                                                            output_padding=2)), message=False)
