"""kiln.nn against torch (kiln/nn/_fractional_pool.py, _pooling.py, _interpolate.py,
_conv_transpose.py, _conv.py, _losses.py, _activations.py, _torch_spellings.py,
modules/sync_batchnorm.py): fractional max pooling (with the
same _random_samples), the *_with_indices wrappers, upsample_*, conv_transpose3d, conv_tbc,
triplet_margin_with_distance_loss, the in-place activations, the torch.* spellings of the
nn ops (integer reductions and modes), the sync-BN helpers' CPU behaviour and the
functional recurrent forms (values and gradients with identical parameters)."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as KF
from nn_compare import FLOATS, REDUCED, close, grad_pair, pair
from torch_compare import assert_same_error


def samples_pair(shape, dtype, seed=3):
    k, t = pair(shape, dtype, low=0.0, high=1.0, seed=seed)
    return k, t


# --- fractional max pooling ---------------------------------------------------------------------
FRACTIONAL_2D = [
    ((2, 3, 9, 11), 3, {"output_size": (4, 5)}),
    ((2, 3, 10, 7), (2, 3), {"output_size": 3}),
    ((3, 8, 8), 2, {"output_ratio": (0.5, 0.6)}),            # unbatched
    ((2, 2, 7, 7), 2, {"output_size": (6, 1)}),
    ((0, 2, 7, 7), 2, {"output_size": (3, 3)}),              # empty batch
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(FRACTIONAL_2D)))
def test_fractional_max_pool2d(case, dtype):
    shape, kernel, kwargs = FRACTIONAL_2D[case]
    kx, tx = pair(shape, dtype, requires_grad=True)
    batch = 1 if len(shape) == 3 else shape[0]
    ks, ts = samples_pair((max(batch, 1), shape[-3], 2), dtype)
    ko, ki = KF.fractional_max_pool2d(kx, kernel, return_indices=True, _random_samples=ks, **kwargs)
    to, ti = TF.fractional_max_pool2d(tx, kernel, return_indices=True, _random_samples=ts, **kwargs)
    close(ko, to, rtol=0, atol=0)
    close(ki, ti, rtol=0, atol=0)
    if to.numel():
        grad_pair(ko, to)
        close(kx.grad, tx.grad)


FRACTIONAL_3D = [
    ((2, 2, 6, 7, 8), 2, {"output_size": (3, 4, 5)}),
    ((2, 5, 6, 7), (2, 3, 2), {"output_ratio": 0.5}),       # unbatched
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(FRACTIONAL_3D)))
def test_fractional_max_pool3d(case, dtype):
    shape, kernel, kwargs = FRACTIONAL_3D[case]
    kx, tx = pair(shape, dtype, requires_grad=True)
    batch = 1 if len(shape) == 4 else shape[0]
    ks, ts = samples_pair((batch, shape[-4], 3), dtype)
    ko, ki = KF.fractional_max_pool3d_with_indices(kx, kernel, _random_samples=ks, **kwargs)
    to, ti = TF.fractional_max_pool3d_with_indices(tx, kernel, _random_samples=ts, **kwargs)
    close(ko, to, rtol=0, atol=0)
    close(ki, ti, rtol=0, atol=0)
    grad_pair(ko, to)
    close(kx.grad, tx.grad)
    only = KF.fractional_max_pool3d(kx.detach(), kernel, _random_samples=ks, **kwargs)
    close(only, to)


@pytest.mark.parametrize("dtype", REDUCED)
def test_fractional_max_pool_reduced_precision_picks_torch_windows(dtype):
    for seed in range(4):
        kx, tx = pair((2, 3, 17, 23), dtype, seed=seed)
        ks, ts = pair((2, 3, 2), dtype, low=0.0, high=1.0, seed=seed + 100)
        ko, ki = KF.fractional_max_pool2d(kx, 3, (6, 9), return_indices=True, _random_samples=ks)
        to, ti = TF.fractional_max_pool2d(tx, 3, (6, 9), return_indices=True, _random_samples=ts)
        close(ki, ti, rtol=0, atol=0)
        close(ko, to, rtol=0, atol=0)
    kx, tx = pair((1, 2, 9, 10, 11), dtype)
    ks, ts = pair((1, 2, 3), dtype, low=0.0, high=1.0, seed=9)
    close(KF.fractional_max_pool3d_with_indices(kx, 2, (4, 5, 6), _random_samples=ks)[1],
          TF.fractional_max_pool3d_with_indices(tx, 2, (4, 5, 6), _random_samples=ts)[1], rtol=0, atol=0)


def test_fractional_max_pool_noncontiguous_and_random():
    kx, tx = pair((2, 3, 9, 8), "float32", noncontiguous=True)
    ks, ts = samples_pair((2, 3, 2), "float32")
    close(KF.fractional_max_pool2d(kx, 2, (4, 4), _random_samples=ks),
          TF.fractional_max_pool2d(tx, 2, (4, 4), _random_samples=ts), rtol=0, atol=0)
    out, idx = KF.fractional_max_pool2d(kx, 2, output_size=4, return_indices=True)  # kiln's own draw
    assert tuple(out.shape) == (2, 3, 4, 4)
    picked = kx.reshape(2, 3, -1).gather(-1, idx.reshape(2, 3, -1)).reshape(2, 3, 4, 4)
    assert np.array_equal(picked.numpy(), out.numpy())


def _frac2d(lib, x, s=None, **kw):
    f = (TF if lib is torch else KF).fractional_max_pool2d
    return lambda: f(x, kw.pop("kernel", 3), _random_samples=s, **kw)


@pytest.mark.parametrize("case", range(9))
def test_fractional_max_pool_errors(case):
    kx, tx = pair((2, 3, 7, 9), "float32")
    ks, ts = samples_pair((2, 3, 2), "float32")
    cases = [
        dict(output_size=(6, 7)),
        dict(),
        dict(output_size=(2, 2), kernel=(3, 3, 3)),
        dict(output_size=(2, 2, 2)),
        dict(output_size=(2, 2), s=lambda lib: lib.rand(1, 3, 2)),
        dict(output_size=(2, 2), s=lambda lib: lib.rand(2, 3, 3)),
        dict(output_size=(2, 2), s=lambda lib: lib.rand(2, 3)),
        dict(output_size=(2, 2), s=lambda lib: lib.rand(2, 3, 2, dtype=lib.float64)),
        dict(output_size=(2, 2), s=lambda lib: lib.rand(2, 4, 2)),
    ]
    kw = dict(cases[case])
    make = kw.pop("s", None)
    k_s, t_s = (make(kiln), make(torch)) if make else (ks, ts)
    error = ValueError if case == 1 else RuntimeError
    got = assert_same_error(_frac2d(kiln, kx, k_s, **dict(kw)), _frac2d(torch, tx, t_s, **dict(kw)))
    assert isinstance(got, error)


def test_fractional_max_pool_more_errors():
    assert_same_error(lambda: KF.fractional_max_pool2d(kiln.zeros(2, 0, 7, 9), 2, 3),
                      lambda: TF.fractional_max_pool2d(torch.zeros(2, 0, 7, 9), 2, 3))
    assert_same_error(lambda: KF.fractional_max_pool2d(kiln.zeros(2, 3, 5, 5, 5), 2, 3,
                                                       _random_samples=kiln.rand(2, 3, 2)),
                      lambda: TF.fractional_max_pool2d(torch.zeros(2, 3, 5, 5, 5), 2, 3,
                                                       _random_samples=torch.rand(2, 3, 2)))
    ki = kiln.zeros(1, 2, 6, 6, dtype=kiln.int64)
    ti = torch.zeros(1, 2, 6, 6, dtype=torch.int64)
    assert_same_error(lambda: KF.fractional_max_pool2d(ki, 2, 3, _random_samples=ki[:, :, 0, :2]),
                      lambda: TF.fractional_max_pool2d(ti, 2, 3, _random_samples=ti[:, :, 0, :2]))
    assert_same_error(lambda: KF.fractional_max_pool3d(kiln.zeros(2, 3, 5, 6, 7), 2, (3, 3, 8)),
                      lambda: TF.fractional_max_pool3d(torch.zeros(2, 3, 5, 6, 7), 2, (3, 3, 8)))
    assert_same_error(lambda: KF.fractional_max_pool3d(kiln.zeros(2, 3, 5, 6, 7), (2, 2), (3, 3, 3)),
                      lambda: TF.fractional_max_pool3d(torch.zeros(2, 3, 5, 6, 7), (2, 2), (3, 3, 3)))
    assert_same_error(lambda: KF.fractional_max_pool3d(kiln.zeros(2, 3, 5, 6, 7), 2, (3, 3, 3),
                                                       _random_samples=kiln.rand(2, 3, 2)),
                      lambda: TF.fractional_max_pool3d(torch.zeros(2, 3, 5, 6, 7), 2, (3, 3, 3),
                                                       _random_samples=torch.rand(2, 3, 2)))


# --- the with_indices wrappers and upsample -----------------------------------------------------
@pytest.mark.parametrize("name, shape, args", [
    ("max_pool1d_with_indices", (2, 3, 9), (3, 2, 1)),
    ("max_pool2d_with_indices", (2, 3, 7, 8), (3, 2, 1)),
    ("max_pool3d_with_indices", (1, 2, 5, 6, 5), (2,)),
    ("adaptive_max_pool1d_with_indices", (2, 3, 9), (4,)),
    ("adaptive_max_pool2d_with_indices", (2, 3, 7, 8), ((3, 5),)),
    ("adaptive_max_pool3d_with_indices", (1, 2, 5, 6, 5), (2,)),
])
def test_with_indices_wrappers(name, shape, args):
    kx, tx = pair(shape, "float64", requires_grad=True)
    ko, ki = getattr(KF, name)(kx, *args)
    to, ti = getattr(TF, name)(tx, *args)
    close(ko, to)
    close(ki, ti, rtol=0, atol=0)
    grad_pair(ko, to)
    close(kx.grad, tx.grad)


@pytest.mark.parametrize("name, kwargs", [("upsample_nearest", {"scale_factor": 2}),
                                          ("upsample_bilinear", {"size": (5, 7)})])
def test_upsample_deprecated(name, kwargs):
    kx, tx = pair((1, 2, 3, 4), "float32", requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ko = getattr(KF, name)(kx, **kwargs)
    assert any(f"`nn.functional.{name}` is deprecated" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        to = getattr(TF, name)(tx, **kwargs)
    close(ko, to)
    grad_pair(ko, to)
    close(kx.grad, tx.grad)


# --- conv_transpose3d and conv_tbc --------------------------------------------------------------
CONV_T3D = [
    ((2, 4, 3, 4, 3), (4, 3, 2, 3, 2), {}),
    ((1, 4, 3, 3, 4), (4, 2, 3, 2, 3), {"stride": (2, 1, 2), "padding": (1, 0, 1), "output_padding": (1, 0, 1),
                                        "groups": 2, "dilation": (1, 2, 1)}),
    ((2, 3, 3, 3), (2, 2, 2, 2, 2), {"stride": 2, "padding": 1}),      # unbatched
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(CONV_T3D)))
def test_conv_transpose3d(case, dtype):
    shape, wshape, kwargs = CONV_T3D[case]
    kx, tx = pair(shape, dtype, requires_grad=True)
    kw, tw = pair(wshape, dtype, requires_grad=True, seed=5)
    out_c = wshape[1] * kwargs.get("groups", 1)
    kb, tb = pair((out_c,), dtype, requires_grad=True, seed=6)
    ko = KF.conv_transpose3d(kx, kw, kb, **kwargs)
    to = TF.conv_transpose3d(tx, tw, tb, **kwargs)
    close(ko, to)
    grad_pair(ko, to)
    for k, t in ((kx, tx), (kw, tw), (kb, tb)):
        close(k.grad, t.grad)
    close(kiln.conv_transpose3d(kx, kw, kb, **kwargs), torch.conv_transpose3d(tx, tw, tb, **kwargs))


def test_conv_transpose3d_errors():
    kx, tx = pair((1, 4, 3, 3, 3), "float32")
    kw, tw = pair((3, 2, 2, 2, 2), "float32")
    assert_same_error(lambda: KF.conv_transpose3d(kx, kw), lambda: TF.conv_transpose3d(tx, tw))


@pytest.mark.parametrize("pad", [0, 1, -1])
def test_conv_tbc(pad):
    kx, tx = pair((6, 2, 3), "float64", requires_grad=True)
    kw, tw = pair((3, 3, 4), "float64", requires_grad=True, seed=1)
    kb, tb = pair((4,), "float64", requires_grad=True, seed=2)
    ko, to = KF.conv_tbc(kx, kw, kb, pad), TF.conv_tbc(tx, tw, tb, pad)
    close(ko, to)
    grad_pair(ko, to)
    for k, t in ((kx, tx), (kw, tw), (kb, tb)):
        close(k.grad, t.grad)


@pytest.mark.parametrize("shapes", [((6, 2), (3, 3, 4), (4,)), ((6, 2, 3), (3, 4), (4,)),
                                    ((6, 2, 3), (3, 3, 4), (1, 4)),
                                    ((6, 2, 3), (3, 2, 4), (4,)), ((6, 2, 3), (3, 3, 4), (5,)),
                                    ((2, 2, 3), (9, 3, 4), (4,))])
def test_conv_tbc_errors(shapes):
    ks = [pair(s, "float32")[0] for s in shapes]
    ts = [pair(s, "float32")[1] for s in shapes]
    assert_same_error(lambda: kiln.conv_tbc(*ks), lambda: torch.conv_tbc(*ts))


# --- losses and in-place activations ------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [{}, {"swap": True, "margin": 0.5, "reduction": "sum"}, {"reduction": "none"}])
@pytest.mark.parametrize("custom", [False, True])
def test_triplet_margin_with_distance_loss(kwargs, custom):
    ks, ts = zip(*[pair((4, 5), "float64", requires_grad=True, seed=i) for i in range(3)])
    kd = (lambda a, b: 1 - KF.cosine_similarity(a, b)) if custom else None
    td = (lambda a, b: 1 - TF.cosine_similarity(a, b)) if custom else None
    ko = KF.triplet_margin_with_distance_loss(*ks, distance_function=kd, **kwargs)
    to = TF.triplet_margin_with_distance_loss(*ts, distance_function=td, **kwargs)
    close(ko, to)
    grad_pair(ko, to)
    for k, t in zip(ks, ts):
        close(k.grad, t.grad)


def test_triplet_margin_with_distance_loss_errors():
    k, t = pair((3, 4), "float32")
    assert_same_error(lambda: KF.triplet_margin_with_distance_loss(k, k, k, margin=0),
                      lambda: TF.triplet_margin_with_distance_loss(t, t, t, margin=0))
    assert_same_error(lambda: KF.triplet_margin_with_distance_loss(k, k, k, reduction="avg"),
                      lambda: TF.triplet_margin_with_distance_loss(t, t, t, reduction="avg"))
    assert_same_error(lambda: KF.triplet_margin_with_distance_loss(k, k[0], k),
                      lambda: TF.triplet_margin_with_distance_loss(t, t[0], t))


@pytest.mark.parametrize("name, args", [("elu_", (0.7,)), ("celu_", (1.3,)), ("selu_", ()), ("hardtanh_", (-0.5, 0.4)),
                                        ("leaky_relu_", (0.2,)), ("threshold_", (0.1, -2.0))])
@pytest.mark.parametrize("dtype", FLOATS)
def test_inplace_activations(name, args, dtype):
    kx, tx = pair((3, 4), dtype, requires_grad=True)
    ky, ty = kx * 1, tx * 1
    kr, tr = getattr(KF, name)(ky, *args), getattr(TF, name)(ty, *args)
    assert kr is ky
    close(ky, ty)
    grad_pair(ky, ty)
    close(kx.grad, tx.grad)


def test_inplace_on_leaf_requiring_grad_fails_like_torch():
    kx, tx = pair((3,), "float32", requires_grad=True)
    assert_same_error(lambda: KF.elu_(kx), lambda: TF.elu_(tx), message=False)


def test_native_channel_shuffle():
    kx, tx = pair((2, 6, 3, 2), "float32")
    close(KF.native_channel_shuffle(kx, 3), TF.native_channel_shuffle(tx, 3))
    close(kiln.native_channel_shuffle(kx, 2), torch.native_channel_shuffle(tx, 2))


# --- torch.* spellings --------------------------------------------------------------------------
def _pairs(*shapes, dtype="float64", grad=True):
    return zip(*[pair(s, dtype, requires_grad=grad, seed=i) for i, s in enumerate(shapes)])


LOSS_CASES = {
    "kl_div": (lambda lib, xs, r: lib.kl_div(xs[0], xs[1].abs(), r), (3, 4), 2),
    "kl_div_log_target": (lambda lib, xs, r: lib.kl_div(xs[0], xs[1], r, log_target=True), (3, 4), 2),
    "bce_logits": (lambda lib, xs, r: lib.binary_cross_entropy_with_logits(xs[0], xs[1].sigmoid(), None, None, r),
                   (3, 4), 2),
    "hinge": (lambda lib, xs, r: lib.hinge_embedding_loss(xs[0], lib.sign(xs[1]), 0.5, r), (6,), 2),
    "margin_ranking": (lambda lib, xs, r: lib.margin_ranking_loss(xs[0], xs[1], lib.sign(xs[2]), 0.2, r), (6,), 3),
    "cosine_embedding": (lambda lib, xs, r: lib.cosine_embedding_loss(xs[0], xs[1], lib.sign(xs[2][:, 0]), 0.1, r),
                         (4, 5), 3),
    "poisson_nll": (lambda lib, xs, r: lib.poisson_nll_loss(xs[0], xs[1].abs(), True, True, 1e-8, r), (3, 4), 2),
    "triplet": (lambda lib, xs, r: lib.triplet_margin_loss(xs[0], xs[1], xs[2], 1.0, 2.0, 1e-6, True, r), (4, 5), 3),
}


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("name", sorted(LOSS_CASES))
def test_torch_level_losses_take_reduction_codes(name, reduction):
    fn, shape, n = LOSS_CASES[name]
    ks, ts = _pairs(*[shape] * n)
    ko, to = fn(kiln, ks, reduction), fn(torch, ts, reduction)
    close(ko, to)
    grad_pair(ko, to)
    close(ks[0].grad, ts[0].grad)


def test_torch_level_ctc_loss():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 2, 4))
    tl = torch.tensor(logits).log_softmax(-1).requires_grad_()
    kl = kiln.tensor(tl.detach().numpy()).requires_grad_()
    targets = [[1, 2, 1], [3, 1, 0]]
    for reduction in (0, 1, 2):
        ko = kiln.ctc_loss(kl, kiln.tensor(targets), [6, 5], [3, 2], 0, reduction, False)
        to = torch.ctc_loss(tl, torch.tensor(targets), [6, 5], [3, 2], 0, reduction, False)
        close(ko, to)


def test_torch_level_adaptive_max_pool1d_and_max_pool3d():
    kx, tx = pair((2, 3, 9), "float32", requires_grad=True)
    ko, ki = kiln.adaptive_max_pool1d(kx, [4])
    to, ti = torch.adaptive_max_pool1d(tx, [4])
    close(ko, to)
    close(ki, ti)
    kx, tx = pair((1, 2, 5, 6, 5), "float32")
    close(kiln.max_pool3d(kx, [2, 2, 2]), torch.max_pool3d(tx, [2, 2, 2]))
    close(kiln.max_pool3d(kx, 3, 2, 1, 1, True), torch.max_pool3d(tx, 3, 2, 1, 1, True))


@pytest.mark.parametrize("name", ["alpha_dropout", "feature_alpha_dropout", "feature_dropout"])
def test_torch_level_dropouts(name):
    kx, tx = pair((4, 6, 3), "float32")
    close(getattr(kiln, name)(kx, 0.3, False), getattr(torch, name)(tx, 0.3, False))   # eval: identity
    out = getattr(kiln, name)(kx, 0.5, True)
    assert tuple(out.shape) == (4, 6, 3)
    if name == "feature_dropout":  # one draw per (sample, channel): whole rows kept (x 2) or zeroed
        o, x = out.numpy(), kx.numpy()
        rows_zero, rows_kept = (o == 0).all(-1), np.isclose(o, 2 * x).all(-1)
        assert (rows_zero | rows_kept).all() and rows_zero.any() and rows_kept.any()
    else:
        assert not np.isclose(out.numpy(), kx.numpy()).all()
    y = kx.clone()
    r = getattr(kiln, name + "_")(y, 0.5, True)
    assert r is y


def test_torch_level_constant_pad_and_convolution():
    kx, tx = pair((2, 3, 4, 5), "float64", requires_grad=True)
    close(kiln.constant_pad_nd(kx, [1, 2, -1, 1], 1.5), torch.constant_pad_nd(tx, [1, 2, -1, 1], 1.5))
    for transposed, wshape, kwargs in [(False, (4, 3, 2, 3), ([2, 1], [1, 0], [1, 2], [0, 0], 1)),
                                       (True, (3, 2, 3, 2), ([2, 2], [1, 0], [1, 1], [1, 0], 1)),
                                       (False, (6, 1, 3, 3), ([1, 1], [1, 1], [1, 1], [0, 0], 3))]:
        kw, tw = pair(wshape, "float64", requires_grad=True, seed=3)
        stride, padding, dilation, out_pad, groups = kwargs
        ko = kiln.convolution(kx, kw, None, stride, padding, dilation, transposed, out_pad, groups)
        to = torch.convolution(tx, tw, None, stride, padding, dilation, transposed, out_pad, groups)
        close(ko, to)
        grad_pair(ko, to)
        close(kw.grad, tw.grad)
    k1, t1 = pair((2, 3, 7), "float64")
    kw, tw = pair((4, 3, 2), "float64", seed=4)
    close(kiln.convolution(k1, kw, None, [1], [0], [1], False, [0], 1),
          torch.convolution(t1, tw, None, [1], [0], [1], False, [0], 1))
    k3, t3 = pair((1, 2, 4, 4, 4), "float64")
    kw, tw = pair((2, 2, 2, 2, 2), "float64", seed=4)
    close(kiln.convolution(k3, kw, None, [1, 1, 1], [0, 0, 0], [1, 1, 1], True, [0, 0, 0], 1),
          torch.convolution(t3, tw, None, [1, 1, 1], [0, 0, 0], [1, 1, 1], True, [0, 0, 0], 1))
    kb, tb = pair((2, 3), "float64")
    assert_same_error(lambda: kiln.convolution(kx, kb, None, [1], [0], [1], False, [0], 1),
                      lambda: torch.convolution(tx, tb, None, [1], [0], [1], False, [0], 1))


def test_torch_level_aliases_of_functional():
    kx, tx = pair((2, 8, 3, 4), "float32")
    close(kiln.channel_shuffle(kx, 4), torch.channel_shuffle(tx, 4))
    close(kiln.pixel_shuffle(kx, 2), torch.pixel_shuffle(tx, 2))
    close(kiln.pixel_unshuffle(kx[:, :, :2], 2), torch.pixel_unshuffle(tx[:, :, :2], 2))
    close(kiln.hardshrink(kx, 0.3), torch.hardshrink(tx, 0.3))
    close(kx.hardshrink(), tx.hardshrink())
    kw, tw = pair((8,), "float32", seed=2)
    close(kiln.prelu(kx, kw), torch.prelu(tx, tw))
    close(kx.prelu(kw), tx.prelu(tw))
    ka, ta = pair((5, 4), "float64")
    kb, tb = pair((5, 4), "float64", seed=2)
    close(kiln.pairwise_distance(ka, kb), torch.pairwise_distance(ta, tb))
    close(kiln.cosine_similarity(ka, kb), torch.cosine_similarity(ta, tb))
    close(kiln.pdist(ka), torch.pdist(ta))
    close(kiln.rrelu(ka), torch.rrelu(ta))
    kw3, tw3 = pair((3, 4, 4), "float64", seed=3)
    close(kiln.bilinear(ka, kb, kw3), torch.bilinear(ta, tb, tw3))
    kx5, tx5 = pair((1, 2, 3, 3, 3), "float64")
    kc, tc = pair((3, 2, 2, 2, 2), "float64", seed=4)
    close(kiln.conv3d(kx5, kc), torch.conv3d(tx5, tc))
    k1, t1 = pair((1, 3, 5), "float64")
    kt, tt = pair((3, 2, 2), "float64", seed=5)
    close(kiln.conv_transpose1d(k1, kt, None, 2), torch.conv_transpose1d(t1, tt, None, 2))
    close(kiln.conv_transpose2d(k1.unsqueeze(-1), kt.unsqueeze(-1)), torch.conv_transpose2d(t1.unsqueeze(-1),
                                                                                            tt.unsqueeze(-1)))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("extra", [{}, {"include_last_offset": True}, {"padding_idx": 4}])
def test_torch_level_embedding_bag(mode, extra, dtype):
    kw, tw = pair((6, 3), dtype, requires_grad=True)
    idx = [1, 2, 4, 5, 4, 3, 2, 0]
    offsets = [0, 2, 2, 5] + ([8] if extra.get("include_last_offset") else [])
    args = (False, mode, False, None, extra.get("include_last_offset", False))
    kout = kiln.embedding_bag(kw, kiln.tensor(idx), kiln.tensor(offsets), *args, extra.get("padding_idx"))
    tout = torch.embedding_bag(tw, torch.tensor(idx), torch.tensor(offsets), *args, extra.get("padding_idx"))
    close(kout[0], tout[0])
    for k, t in zip(kout[1:], tout[1:]):
        close(k, t, rtol=0, atol=0)
    grad_pair(kout[0], tout[0])
    close(kw.grad, tw.grad)


def test_torch_level_embedding_renorm():
    kw, tw = pair((5, 3), "float64")
    kw, tw = kw * 2, tw * 2
    kr = kiln.embedding_renorm_(kw, kiln.tensor([0, 1, 1, 3]), 1.0, 2.0)
    tr = torch.embedding_renorm_(tw, torch.tensor([0, 1, 1, 3]), 1.0, 2.0)
    assert kr is kw
    close(kw, tw)


@pytest.mark.parametrize("interp, padding", [(0, 0), (1, 1), (0, 2), (1, 2)])
@pytest.mark.parametrize("align", [False, True])
def test_torch_level_grid_sampler(interp, padding, align):
    kx, tx = pair((1, 2, 4, 5), "float64", requires_grad=True)
    kg, tg = pair((1, 3, 3, 2), "float64", low=-1.1, high=1.1, seed=2)
    ko = kiln.grid_sampler(kx, kg, interp, padding, align)
    to = torch.grid_sampler(tx, tg, interp, padding, align)
    close(ko, to)
    close(kiln.grid_sampler_2d(kx, kg, interp, padding, align), torch.grid_sampler_2d(tx, tg, interp, padding, align))
    grad_pair(ko, to)
    close(kx.grad, tx.grad)
    assert_same_error(lambda: kiln.grid_sampler_3d(kx, kg, interp, padding, align),
                      lambda: torch.grid_sampler_3d(tx, tg, interp, padding, align))
    kt, tt = pair((2, 2, 3), "float64", seed=3)
    close(kiln.affine_grid_generator(kt, [2, 1, 3, 4], align), torch.affine_grid_generator(tt, [2, 1, 3, 4], align))


def test_torch_level_instance_norm():
    kx, tx = pair((2, 3, 5), "float64", requires_grad=True)
    kw, tw = pair((3,), "float64", requires_grad=True, seed=1)
    kb, tb = pair((3,), "float64", requires_grad=True, seed=2)
    krm, trm = kiln.zeros(3, dtype=kiln.float64), torch.zeros(3, dtype=torch.float64)
    krv, trv = kiln.ones(3, dtype=kiln.float64), torch.ones(3, dtype=torch.float64)
    ko = kiln.instance_norm(kx, kw, kb, krm, krv, True, 0.1, 1e-5, False)
    to = torch.instance_norm(tx, tw, tb, trm, trv, True, 0.1, 1e-5, False)
    close(ko, to)
    close(krm, trm)
    close(krv, trv)
    grad_pair(ko, to)
    for k, t in ((kx, tx), (kw, tw), (kb, tb)):
        close(k.grad, t.grad)


def test_torch_level_norms():
    kx, tx = pair((3, 4, 5), "float64", requires_grad=True)
    for dim in (1, 2, -2):
        close(kiln.norm_except_dim(kx, 2, dim), torch.norm_except_dim(tx, 2, dim))
    close(kiln.norm_except_dim(kx, 3, 0), torch.norm_except_dim(tx, 3, 0))
    close(kiln.norm_except_dim(kx, 2, -1), torch.norm_except_dim(tx, 2, -1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ko, to = kiln.frobenius_norm(kx, (1, 2)), torch.frobenius_norm(tx, (1, 2))
        close(ko, to)
        close(kiln.frobenius_norm(kx, 1, True), torch.frobenius_norm(tx, 1, True))
        close(kiln.nuclear_norm(kx[0]), torch.nuclear_norm(tx[0]))
        close(kiln.nuclear_norm(kx, (1, 2), True), torch.nuclear_norm(tx, (1, 2), True))
        assert_same_error(lambda: kiln.frobenius_norm(kx, (0, 1, 2)), lambda: torch.frobenius_norm(tx, (0, 1, 2)))
    grad_pair(ko, to)
    close(kx.grad, tx.grad)
    with pytest.warns(UserWarning, match="frobenius_norm is deprecated"):
        kiln.frobenius_norm(kx, (1, 2))
    assert_same_error(lambda: kiln.native_norm(kx), lambda: torch.native_norm(tx), message=False)


def test_sync_batch_norm_helpers_on_cpu():
    kx, tx = pair((4, 3, 5), "float64")
    km, tm = kx.mean((0, 2)), tx.mean((0, 2))
    cases = [
        ("batch_norm_stats", (kx, 1e-5), (tx, 1e-5)),
        ("batch_norm_elemt", (kx, None, None, km, km, 1e-5), (tx, None, None, tm, tm, 1e-5)),
        ("batch_norm_gather_stats", (kx, km[None], km[None], None, None, 0.1, 1e-5, 20),
         (tx, tm[None], tm[None], None, None, 0.1, 1e-5, 20)),
        ("batch_norm_gather_stats_with_counts", (kx, km[None], km[None], None, None, 0.1, 1e-5, km[:1]),
         (tx, tm[None], tm[None], None, None, 0.1, 1e-5, tm[:1])),
        ("batch_norm_backward_reduce", (kx, kx, km, km, None, True, True, True),
         (tx, tx, tm, tm, None, True, True, True)),
        ("batch_norm_backward_elemt", (kx, kx, km, km, None, km, km, km), (tx, tx, tm, tm, None, tm, tm, tm)),
    ]
    for name, kargs, targs in cases:
        error = assert_same_error(lambda: getattr(kiln, name)(*kargs), lambda: getattr(torch, name)(*targs),
                                  message=False)
        assert f"Could not run 'aten::{name}' with arguments from the 'CPU' backend" in str(error)
    krm, trm = kiln.zeros(3, dtype=kiln.float64), torch.zeros(3, dtype=torch.float64)
    krv, trv = kiln.ones(3, dtype=kiln.float64), torch.ones(3, dtype=torch.float64)
    kout = kiln.batch_norm_update_stats(kx, krm, krv, 0.2)
    tout = torch.batch_norm_update_stats(tx, trm, trv, 0.2)
    for k, t in zip(kout + (krm, krv), tout + (trm, trv)):
        close(k, t)
    close(kiln.batch_norm_update_stats(kx.float(), None, None, 0.1)[1], torch.batch_norm_update_stats(tx.float(), None,
                                                                                                    None, 0.1)[1])


# --- functional recurrent networks --------------------------------------------------------------
_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _rnn_params(mode, input_size, hidden, layers, bidirectional, bias, proj=0, dtype="float64"):
    gates = _GATES[mode] * hidden
    real = proj or hidden
    dirs = 2 if bidirectional else 1
    ks, ts, seed = [], [], 20
    for layer in range(layers):
        for _ in range(dirs):
            shapes = [(gates, input_size if layer == 0 else real * dirs), (gates, real)]
            shapes += [(gates,), (gates,)] if bias else []
            shapes += [(proj, hidden)] if proj else []
            for shape in shapes:
                k, t = pair(shape, dtype, requires_grad=True, seed=seed, low=-0.5, high=0.5)
                seed += 1
                ks.append(k), ts.append(t)
    return ks, ts


RNN_CASES = [
    ("lstm", dict(layers=2, bidirectional=True, bias=True, batch_first=False)),
    ("lstm", dict(layers=1, bidirectional=False, bias=False, batch_first=True, proj=2)),
    ("gru", dict(layers=2, bidirectional=False, bias=True, batch_first=True)),
    ("gru", dict(layers=1, bidirectional=True, bias=False, batch_first=False)),
    ("rnn_tanh", dict(layers=2, bidirectional=True, bias=True, batch_first=False)),
    ("rnn_relu", dict(layers=1, bidirectional=False, bias=True, batch_first=True)),
]


@pytest.mark.parametrize("case", range(len(RNN_CASES)))
def test_functional_rnn_matches_torch(case):
    mode, cfg = RNN_CASES[case]
    hidden, proj, dirs = 3, cfg.get("proj", 0), 2 if cfg["bidirectional"] else 1
    kp, tp = _rnn_params(mode, 4, hidden, cfg["layers"], cfg["bidirectional"], cfg["bias"], proj)
    shape = (2, 5, 4) if cfg["batch_first"] else (5, 2, 4)
    kx, tx = pair(shape, "float64", requires_grad=True)
    kh, th = pair((cfg["layers"] * dirs, 2, proj or hidden), "float64", requires_grad=True, seed=7)
    flags = (cfg["bias"], cfg["layers"], 0.0, True, cfg["bidirectional"], cfg["batch_first"])
    if mode == "lstm":
        kc, tc = pair((cfg["layers"] * dirs, 2, hidden), "float64", requires_grad=True, seed=8)
        kout = kiln.lstm(kx, [kh, kc], kp, *flags)
        tout = torch.lstm(tx, [th, tc], tp, *flags)
    else:
        kout = getattr(kiln, mode)(kx, kh, kp, *flags)
        tout = getattr(torch, mode)(tx, th, tp, *flags)
    assert len(kout) == len(tout)
    for k, t in zip(kout, tout):
        close(k, t)
    loss_k = sum((o * (i + 1)).sum() for i, o in enumerate(kout))
    loss_t = sum((o * (i + 1)).sum() for i, o in enumerate(tout))
    loss_k.backward()
    loss_t.backward()
    for k, t in zip([kx, kh] + kp, [tx, th] + tp):
        close(k.grad, t.grad)


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_functional_rnn_packed_overload(mode):
    kp, tp = _rnn_params(mode, 4, 3, 1, True, True)
    lengths = [4, 3, 1]
    kx, tx = pair((sum(lengths), 4), "float64", requires_grad=True)
    sizes = [3, 2, 2, 1]
    kb, tb = kiln.tensor(sizes), torch.tensor(sizes)
    kh, th = pair((2, 3, 3), "float64", seed=7)
    flags = (True, 1, 0.0, False, True)
    if mode == "lstm":
        kc, tc = pair((2, 3, 3), "float64", seed=8)
        kout, tout = kiln.lstm(kx, kb, [kh, kc], kp, *flags), torch.lstm(tx, tb, [th, tc], tp, *flags)
    else:
        kout, tout = getattr(kiln, mode)(kx, kb, kh, kp, *flags), getattr(torch, mode)(tx, tb, th, tp, *flags)
    for k, t in zip(kout, tout):
        close(k, t)
    grad_pair(kout[0], tout[0])
    close(kx.grad, tx.grad)
    close(kp[0].grad, tp[0].grad)


@pytest.mark.parametrize("mode", ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"])
@pytest.mark.parametrize("bias", [True, False])
def test_functional_cells_match_torch(mode, bias):
    gates = _GATES[mode.removesuffix("_cell")] * 3
    kx, tx = pair((2, 4), "float64", requires_grad=True)
    kh, th = pair((2, 3), "float64", requires_grad=True, seed=1)
    (kwi, kwh), (twi, twh) = _pairs((gates, 4), (gates, 3))
    kb = tb = (None, None)
    if bias:
        kb, tb = _pairs((gates,), (gates,))
    if mode == "lstm_cell":
        kc, tc = pair((2, 3), "float64", requires_grad=True, seed=2)
        kout, tout = kiln.lstm_cell(kx, [kh, kc], kwi, kwh, *kb), torch.lstm_cell(tx, [th, tc], twi, twh, *tb)
        close(kout[1], tout[1])
        kout, tout = kout[0] + kout[1] * 2, tout[0] + tout[1] * 2
    else:
        kout, tout = getattr(kiln, mode)(kx, kh, kwi, kwh, *kb), getattr(torch, mode)(tx, th, twi, twh, *tb)
    close(kout, tout)
    grad_pair(kout, tout)
    for k, t in zip([kx, kh, kwi, kwh], [tx, th, twi, twh]):
        close(k.grad, t.grad)
    assert_same_error(lambda: kiln.gru_cell(kx[0], kh[0], kwi, kwh), lambda: torch.gru_cell(tx[0], th[0], twi, twh))


@pytest.mark.parametrize("name, args", [("elu", ()), ("celu", ()), ("selu", ()), ("hardtanh", ()),
                                        ("leaky_relu", ()), ("threshold", (0.1, 2.0))])
def test_functional_inplace_flag_writes_the_input_like_torch(name, args):
    """F.elu(x, inplace=True) and friends: torch has no Tensor.elu_, so kiln's F falls back to the op."""
    values = [-2.0, -0.5, 0.5, 3.0]
    k, t = kiln.tensor(values), torch.tensor(values)
    kr = getattr(kiln.nn.functional, name)(k, *args, inplace=True)
    tr = getattr(torch.nn.functional, name)(t, *args, inplace=True)
    assert kr is k and tr is t
    np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=1e-6)


CONV_TRANSPOSE_ERRORS = {
    "2d output too small": lambda F, L: F.conv_transpose2d(L.ones(1, 2, 1, 1), L.ones(2, 3, 1, 2), padding=1),
    "1d output too small": lambda F, L: F.conv_transpose1d(L.ones(1, 2, 3), L.ones(2, 3, 1), padding=2),
    "1d weight below groups": lambda F, L: F.conv_transpose1d(L.ones(1, 4, 3), L.ones(0, 3, 1), groups=2),
    "1d weight not divisible by groups": lambda F, L: F.conv_transpose1d(L.ones(1, 3, 3), L.ones(3, 3, 1), groups=2),
    "2d weight not divisible by groups": lambda F, L: F.conv_transpose2d(L.ones(1, 3, 3, 3), L.ones(3, 3, 1, 1),
                                                                       groups=2),
}


@pytest.mark.parametrize("name", sorted(CONV_TRANSPOSE_ERRORS))
def test_conv_transpose_errors(name):
    assert_same_error(lambda: CONV_TRANSPOSE_ERRORS[name](KF, kiln), lambda: CONV_TRANSPOSE_ERRORS[name](TF, torch))


COSINE_CASES = {
    "ints are refused": (lambda L: L.tensor([[1, 2], [3, 4]]), lambda L: L.tensor([[1, 0], [0, 1]])),
    "float with int": (lambda L: L.tensor([[1.0, 2.0]]), lambda L: L.tensor([[1, 0]])),
    "shapes that do not broadcast": (lambda L: L.ones(2, 3), lambda L: L.ones(3, 2)),
    "float16 keeps its precision": (lambda L: L.ones(2, 3, dtype=L.float16), lambda L: L.ones(2, 3)),
    "broadcast along dim": (lambda L: L.arange(12.0).reshape(2, 3, 2), lambda L: L.ones(2, 1, 2)),
    "a zero vector": (lambda L: L.zeros(2, 3), lambda L: L.ones(2, 3)),
}


@pytest.mark.parametrize("name", sorted(COSINE_CASES))
def test_cosine_similarity_matches_torch(name):
    a, b = COSINE_CASES[name]
    try:
        want = TF.cosine_similarity(a(torch), b(torch))
    except RuntimeError:
        assert_same_error(lambda: KF.cosine_similarity(a(kiln), b(kiln)), lambda: TF.cosine_similarity(a(torch), b(torch)))
        return
    got = KF.cosine_similarity(a(kiln), b(kiln))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), rtol=1e-6)


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 4.0, float("inf")])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_normalize_accumulates_reduced_precision_in_float32(p, dtype):
    # |0.064|^4 is a float16 subnormal: a norm accumulated in float16 comes out 0.1% short of torch's
    x = [[0.064, 0.0], [0.5, -0.3], [1e-3, 2e-3]]
    got = KF.normalize(kiln.tensor(x).to(getattr(kiln, dtype)), p=p, dim=-1)
    want = TF.normalize(torch.tensor(x).to(getattr(torch, dtype)), p=p, dim=-1)
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
