"""F.interpolate against torch: every mode (nearest, nearest-exact, linear,
bilinear, trilinear, bicubic, area, antialiased bilinear / bicubic, lanczos),
size and scale_factor (integer, non-integer, per-dim, recompute_scale_factor),
align_corners, up and down sampling, float32 / float64 / float16 / bfloat16 /
uint8, non-contiguous input, gradients and gradcheck, the module forms and the
error paths; and the cases where torch's own forward and backward disagree
(see kiln/nn/_interpolate.py), where kiln's gradient is checked to be its
forward's."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as KF
from nn_compare import close, grad_pair, pair
from torch_compare import assert_same_error

CASES = [
    ((2, 3, 7), "nearest", {"size": 12}),
    ((2, 3, 7), "nearest", {"scale_factor": 0.5}),
    ((1, 2, 5, 6), "nearest", {"size": (8, 3)}),
    ((1, 2, 5, 6), "nearest", {"scale_factor": 2.5}),
    ((1, 1, 3, 4, 5), "nearest", {"size": (5, 2, 7)}),
    ((2, 3, 7), "linear", {"size": 12}),
    ((1, 2, 5, 6), "bilinear", {"size": (8, 3)}),
    ((1, 2, 5, 6), "bilinear", {"scale_factor": 1.7}),
    ((1, 2, 5, 6), "bilinear", {"scale_factor": (2.0, 0.5)}),
    ((1, 2, 5, 6), "bilinear", {"size": (1, 9)}),
    ((1, 1, 3, 4, 5), "trilinear", {"size": (5, 2, 7)}),
    # the modes added with bicubic / area / nearest-exact
    ((2, 2, 5, 6), "bicubic", {"size": (9, 4)}),
    ((1, 2, 6, 5), "bicubic", {"scale_factor": 1.7}),
    ((1, 2, 6, 5), "bicubic", {"scale_factor": (0.6, 2.3)}),
    ((1, 1, 1, 4), "bicubic", {"size": (3, 1)}),
    ((2, 3, 7), "nearest-exact", {"size": 12}),
    ((2, 3, 9), "nearest-exact", {"scale_factor": 0.45}),
    ((1, 2, 5, 6), "nearest-exact", {"size": (8, 3)}),
    ((1, 2, 5, 6), "nearest-exact", {"scale_factor": 1.3}),
    ((1, 1, 3, 4, 5), "nearest-exact", {"size": (5, 2, 7)}),
    ((2, 3, 9), "area", {"size": 4}),
    ((1, 2, 7, 6), "area", {"size": (3, 5)}),
    ((1, 2, 7, 6), "area", {"scale_factor": 0.6}),
    ((1, 1, 5, 4, 6), "area", {"size": (2, 3, 4)}),
]

# align_corners applies to the interpolating modes only (its error with the others is tested below).
_NO_ALIGN = ("nearest", "nearest-exact", "area")
PARAMS = [(*case, align) for case in CASES for align in ([None] if case[1] in _NO_ALIGN else [None, False, True])]


@pytest.mark.parametrize("shape,mode,kw,align_corners", PARAMS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_interpolate(shape, mode, kw, align_corners, dtype):
    k, t = pair(shape, dtype, requires_grad=True)
    ko = KF.interpolate(k, mode=mode, align_corners=align_corners, **kw)
    to = TF.interpolate(t, mode=mode, align_corners=align_corners, **kw)
    close(ko, to)
    grad_pair(ko, to)
    close(k.grad, t.grad)


# antialias=True: downsampling widens the filter by the scale (wide windows at 40 -> 5), upsampling does not.
AA_CASES = [
    ((2, 2, 9, 8), {"size": (4, 3)}),
    ((1, 2, 40, 12), {"size": (5, 7)}),
    ((1, 2, 5, 6), {"size": (11, 9)}),
    ((1, 2, 9, 8), {"size": (1, 3)}),
    ((1, 2, 9, 8), {"scale_factor": 0.45, "recompute_scale_factor": True}),
    ((1, 2, 9, 8), {"scale_factor": (0.37, 1.6)}),
]
AA_PARAMS = [(mode, shape, kw, align) for mode in ("bilinear", "bicubic", "lanczos") for shape, kw in AA_CASES
             for align in ([False] if mode == "lanczos" else [False, True])]


@pytest.mark.parametrize("mode,shape,kw,align_corners", AA_PARAMS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_interpolate_antialias(mode, shape, kw, align_corners, dtype):
    k, t = pair(shape, dtype, requires_grad=True)
    ko = KF.interpolate(k, mode=mode, align_corners=align_corners, antialias=True, **kw)
    to = TF.interpolate(t, mode=mode, align_corners=align_corners, antialias=True, **kw)
    close(ko, to)
    grad_pair(ko, to)
    close(k.grad, t.grad)


# Non-integer scale factors, kept (the op uses 1 / scale) or recomputed (it uses in / out), per mode.
SCALE_PARAMS = [(shape, mode, scale, recompute)
                for shape, mode in [((1, 2, 7), "linear"), ((1, 2, 7, 5), "bilinear"), ((1, 2, 7, 5), "bicubic"),
                                    ((1, 1, 4, 5, 3), "trilinear"), ((1, 2, 7, 5), "nearest"),
                                    ((1, 2, 7, 5), "nearest-exact"), ((1, 2, 7), "nearest-exact")]
                for scale in (1.37, 0.61, 2.5) for recompute in (False, True)]


@pytest.mark.parametrize("shape,mode,scale,recompute", SCALE_PARAMS)
def test_interpolate_scale_factor(shape, mode, scale, recompute):
    k, t = pair(shape, "float64", requires_grad=True)
    ko = KF.interpolate(k, scale_factor=scale, mode=mode, recompute_scale_factor=recompute)
    to = TF.interpolate(t, scale_factor=scale, mode=mode, recompute_scale_factor=recompute)
    close(ko, to)
    grad_pair(ko, to)
    close(k.grad, t.grad)


def test_nearest_2d_shortcuts():
    """torch's 2-D nearest copies when out == in and halves indices when out == 2 * in, whatever the scale."""
    for scale in (1.13, 2.034, (1.1, 2.05)):
        k, t = pair((1, 2, 7, 6), requires_grad=True)
        ko, to = KF.interpolate(k, scale_factor=scale), TF.interpolate(t, scale_factor=scale)
        close(ko, to)
        grad_pair(ko, to)
        close(k.grad, t.grad)


REDUCED_CASES = [
    ((2, 3, 7, 5), "nearest", {"size": (9, 3)}, None),
    ((2, 3, 7), "nearest-exact", {"scale_factor": 1.7}, None),
    ((2, 3, 7), "linear", {"size": 12}, False),
    ((2, 3, 7, 5), "bilinear", {"size": (9, 3)}, True),
    ((2, 3, 7, 5), "bicubic", {"size": (9, 3)}, False),
    ((1, 2, 3, 4, 5), "trilinear", {"size": (5, 2, 7)}, False),
    ((2, 3, 7, 5), "area", {"size": (3, 2)}, None),
]


@pytest.mark.parametrize("shape,mode,kw,align_corners", REDUCED_CASES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_interpolate_reduced_precision(shape, mode, kw, align_corners, dtype):
    """Computed in float32 and rounded once: within one unit in the last place of torch's values."""
    tol = {"float16": 2e-3, "bfloat16": 1.6e-2}[dtype]
    k, t = pair(shape, dtype, requires_grad=True)
    ko = KF.interpolate(k, mode=mode, align_corners=align_corners, **kw)
    to = TF.interpolate(t, mode=mode, align_corners=align_corners, **kw)
    close(ko, to, atol=tol, rtol=tol)
    grad_pair(ko, to)
    close(k.grad, t.grad, atol=tol, rtol=tol)


def test_interpolate_uint8_nearest():
    values = np.random.default_rng(0).integers(0, 256, (2, 3, 5, 7)).astype(np.uint8)
    k, t = kiln.tensor(values), torch.tensor(values)
    for mode in ("nearest", "nearest-exact"):
        close(KF.interpolate(k, size=(8, 4), mode=mode), TF.interpolate(t, size=(8, 4), mode=mode), atol=0, rtol=0)
        close(KF.interpolate(k[:, :, 0], scale_factor=1.6, mode=mode),
              TF.interpolate(t[:, :, 0], scale_factor=1.6, mode=mode), atol=0, rtol=0)
    # torch's uint8 bilinear / bicubic / antialias kernels are fixed point; kiln does not reproduce them.
    with pytest.raises(NotImplementedError, match="uint8"):
        KF.interpolate(k, size=(8, 4), mode="bilinear")
    with pytest.raises(NotImplementedError, match="uint8"):
        KF.interpolate(k, size=(3, 4), mode="bicubic", antialias=True)


@pytest.mark.parametrize("mode,kw", [("bilinear", {"scale_factor": 1.5, "recompute_scale_factor": True}),
                                     ("bicubic", {"size": (4, 9)}), ("nearest-exact", {"size": (4, 9)}),
                                     ("area", {"size": (2, 3)}), ("bilinear", {"size": (2, 3), "antialias": True})])
def test_interpolate_noncontiguous(mode, kw):
    k, t = pair((6, 5, 3, 1), noncontiguous=True, requires_grad=True)
    ko, to = KF.interpolate(k, mode=mode, **kw), TF.interpolate(t, mode=mode, **kw)
    close(ko, to)
    grad_pair(ko, to)
    close(k.grad, t.grad)


GRADCHECK = [
    {"size": (5, 3), "mode": "bilinear"},
    {"size": (5, 3), "mode": "bilinear", "align_corners": True},
    {"scale_factor": 2, "mode": "nearest"},
    {"size": (5, 2), "mode": "bicubic"},
    {"size": (2, 7), "mode": "bicubic", "align_corners": True},
    {"size": (5, 2), "mode": "nearest-exact"},
    {"size": (2, 3), "mode": "area"},
    {"size": (2, 7), "mode": "bilinear", "antialias": True},
    {"size": (2, 5), "mode": "bicubic", "antialias": True},
    {"size": (2, 6), "mode": "lanczos", "antialias": True},
]


@pytest.mark.parametrize("kw", GRADCHECK)
def test_interpolate_gradcheck(kw):
    k, _ = pair((1, 2, 4, 4), "float64", requires_grad=True)
    assert kiln.autograd.gradcheck(lambda x: KF.interpolate(x, **kw), (k,))


def test_interpolate_noncontiguous_recompute_and_gradcheck():
    k, t = pair((6, 5, 3, 1), noncontiguous=True)
    close(KF.interpolate(k, scale_factor=1.5, mode="bilinear", recompute_scale_factor=True),
          TF.interpolate(t, scale_factor=1.5, mode="bilinear", recompute_scale_factor=True))


# --- where torch's own forward and backward disagree (see kiln/nn/_interpolate.py) -------------------
TORCH_INCONSISTENT = [
    # antialias, scale_factor kept, a dim that keeps its size (torch's forward copies it, its backward does not)
    ((1, 2, 5, 7), {"mode": "bilinear", "antialias": True, "scale_factor": (1.07, 0.6)}),
    ((1, 2, 5, 7), {"mode": "bicubic", "antialias": True, "scale_factor": (0.5, 1.1)}),
    # bicubic, scale_factor kept, no size changes (torch's backward is a copy, its forward is not)
    ((1, 2, 5, 7), {"mode": "bicubic", "scale_factor": 1.1}),
    # 1-D / 3-D nearest, out == in or out == 2 * in from a kept scale (torch's backward takes the 2-D shortcuts)
    ((1, 2, 7), {"mode": "nearest", "scale_factor": 1.13}),
    ((1, 1, 3, 4, 3), {"mode": "nearest", "scale_factor": 2.05}),
]


@pytest.mark.parametrize("shape,kw", TORCH_INCONSISTENT)
def test_torch_inconsistent_cases_match_forward(shape, kw):
    """kiln's values are torch's; its gradient is that of those values (gradcheck), and differs from torch's."""
    k, t = pair(shape, "float64", requires_grad=True)
    ko, to = KF.interpolate(k, **kw), TF.interpolate(t, **kw)
    close(ko, to)
    assert kiln.autograd.gradcheck(lambda x: KF.interpolate(x, **kw), (k,))
    grad_pair(ko, to)
    assert not np.allclose(k.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
def test_antialias_width_one_is_the_true_resample(mode):
    """torch repeats output row 0 down a width-1 antialiased output; kiln returns what torch computes for the
    transposed image (the true resample), and torch's gradient, which is the true one."""
    k, t = pair((2, 3, 9, 4), "float64", requires_grad=True)
    ko = KF.interpolate(k, size=(5, 1), mode=mode, antialias=True)
    reference = TF.interpolate(t.transpose(2, 3), size=(1, 5), mode=mode, antialias=True).transpose(2, 3)
    close(ko, reference)
    to = TF.interpolate(t, size=(5, 1), mode=mode, antialias=True)
    grad_pair(ko, to)
    close(k.grad, t.grad)


# --- module forms and the deprecated spellings ------------------------------------------------------
UPSAMPLE_MODULES = [
    {"scale_factor": 2, "mode": "bicubic"}, {"size": (3, 4), "mode": "area"},
    {"scale_factor": 1.5, "mode": "nearest-exact"}, {"scale_factor": (0.5, 1.5), "mode": "nearest"},
    {"scale_factor": 0.5, "mode": "bilinear", "align_corners": True, "recompute_scale_factor": True},
]


@pytest.mark.parametrize("kw", UPSAMPLE_MODULES)
def test_upsample_module(kw):
    k, t = pair((1, 2, 5, 6), requires_grad=True)
    km, tm = kiln.nn.Upsample(**kw), torch.nn.Upsample(**kw)
    assert repr(km) == repr(tm)
    ko, to = km(k), tm(t)
    close(ko, to)
    grad_pair(ko, to)
    close(k.grad, t.grad)


def test_upsampling_modules_and_deprecated_functions():
    k, t = pair((1, 2, 5, 6))
    close(kiln.nn.UpsamplingBilinear2d(scale_factor=2)(k), torch.nn.UpsamplingBilinear2d(scale_factor=2)(t))
    close(kiln.nn.UpsamplingNearest2d(size=(3, 8))(k), torch.nn.UpsamplingNearest2d(size=(3, 8))(t))
    for name, kw in [("upsample", {"scale_factor": 2, "mode": "bicubic"}), ("upsample_bilinear", {"size": 7}),
                     ("upsample_nearest", {"scale_factor": 1.5})]:
        with pytest.warns(UserWarning, match=f"nn.functional.{name}` is deprecated"):
            ko = getattr(KF, name)(k, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            close(ko, getattr(TF, name)(t, **kw))


# --- errors -------------------------------------------------------------------------------------------
ERRORS = [
    ((1, 1, 4, 4), {"size": 3, "align_corners": True}),
    ((1, 1, 4, 4), {"size": 3, "mode": "area", "align_corners": False}),
    ((1, 1, 4, 4), {"size": 3, "mode": "nearest-exact", "align_corners": True}),
    ((1, 1, 4, 4), {"size": 3, "scale_factor": 2.0}),
    ((1, 1, 4, 4), {}),
    ((1, 1, 4, 4), {"size": (3,)}),
    ((1, 1, 4, 4), {"scale_factor": (3.0,)}),
    ((1, 1, 4, 4), {"size": (3.0, 2)}),
    ((1, 1, 4, 4), {"size": (None, 2)}),
    ((1, 1, 4, 4), {"size": 3, "recompute_scale_factor": True}),
    ((1, 1, 4, 4), {"size": 3, "mode": "linear"}),
    ((1, 1, 4), {"size": 3, "mode": "bilinear"}),
    ((1, 1, 4, 4, 4), {"size": 3, "mode": "bilinear"}),
    ((1, 1, 4, 4), {"size": 3, "mode": "trilinear"}),
    ((1, 1, 4), {"size": 3, "mode": "bicubic"}),
    ((1, 1, 4, 4, 4), {"size": 3, "mode": "bicubic"}),
    ((1, 1, 4, 4), {"size": 3, "mode": "bogus"}),
    ((2, 4), {"size": 3}),
    ((1, 1, 2, 2, 2, 2), {"size": 3}),
    ((1, 1, 4, 4), {"size": 3, "antialias": True}),
    ((1, 1, 4), {"size": 3, "mode": "linear", "antialias": True}),
    ((1, 1, 4, 4, 4), {"size": 3, "mode": "trilinear", "antialias": True}),
    ((1, 1, 4, 4), {"size": 3, "mode": "lanczos"}),
    ((1, 1, 4, 4), {"size": 3, "mode": "lanczos", "antialias": True, "align_corners": True}),
    ((1, 1, 4), {"size": 3, "mode": "lanczos"}),
    ((1, 2, 4), {"size": 0}),
    ((1, 2, 4, 4), {"size": (0, 2), "mode": "bilinear"}),
    ((1, 2, 3, 4, 4), {"size": (2, 0, 2), "mode": "trilinear"}),
    ((1, 2, 4, 4), {"size": -2, "mode": "bicubic"}),
    ((1, 2, 4, 4), {"size": 0, "mode": "bicubic", "antialias": True}),
    ((1, 2, 4, 4), {"scale_factor": 0.1}),
    ((1, 2, 4, 4), {"scale_factor": -2.0, "recompute_scale_factor": True}),
    ((1, 2, 4, 4), {"scale_factor": float("inf")}),
    ((1, 2, 4, 4), {"scale_factor": float("nan"), "mode": "bilinear"}),
    ((1, 2, 4, 4), {"scale_factor": float("inf"), "recompute_scale_factor": True}),
    ((1, 2, 4, 4), {"scale_factor": float("nan"), "recompute_scale_factor": True}),
    ((1, 0, 4), {"size": 3}),
    ((1, 0, 4, 4), {"size": 3, "mode": "bilinear", "antialias": True}),
    ((0, 0, 4, 4, 4), {"size": 3, "mode": "trilinear"}),
    ((1, 2, 0, 4), {"size": 3, "mode": "nearest-exact"}),
    ((1, 2, 0, 4), {"size": 3, "mode": "area"}),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_interpolate_errors(case):
    shape, kw = ERRORS[case]
    k, t = kiln.ones(*shape), torch.ones(*shape)
    assert_same_error(lambda: KF.interpolate(k, **kw), lambda: TF.interpolate(t, **kw))


DTYPE_ERRORS = [
    ("int64", (1, 1, 4), "nearest", False), ("int64", (1, 1, 4, 4), "nearest", False),
    ("int32", (1, 1, 4, 4, 4), "nearest-exact", False), ("bool", (1, 1, 4), "linear", False),
    ("int64", (1, 1, 4, 4), "bilinear", False), ("uint8", (1, 1, 4, 4, 4), "trilinear", False),
    ("int64", (1, 1, 4, 4), "bicubic", False), ("int64", (1, 1, 4, 4), "area", False),
    ("uint8", (1, 1, 4, 4, 4), "area", False), ("float16", (1, 1, 4, 4), "bilinear", True),
    ("bfloat16", (1, 1, 4, 4), "lanczos", True), ("int64", (1, 1, 4, 4), "bicubic", True),
]


@pytest.mark.parametrize("dtype,shape,mode,antialias", DTYPE_ERRORS)
def test_interpolate_dtype_errors(dtype, shape, mode, antialias):
    k, t = kiln.ones(*shape, dtype=getattr(kiln, dtype)), torch.ones(*shape, dtype=getattr(torch, dtype))
    assert_same_error(lambda: KF.interpolate(k, size=3, mode=mode, antialias=antialias),
                      lambda: TF.interpolate(t, size=3, mode=mode, antialias=antialias))


def test_interpolate_binding_type_errors():
    """torch's C++ binding rejects a float size / a non-number scale with its own text: same type in kiln."""
    k, t = kiln.ones(1, 1, 4, 4), torch.ones(1, 1, 4, 4)
    assert_same_error(lambda: KF.interpolate(k, size=3.5), lambda: TF.interpolate(t, size=3.5), message=False)
    assert_same_error(lambda: KF.interpolate(k, scale_factor="a"), lambda: TF.interpolate(t, scale_factor="a"),
                      message=False)


def test_interpolate_empty_and_integer_arguments():
    for shape, mode in [((0, 2, 4, 4), "bilinear"), ((0, 2, 4), "nearest"), ((0, 2, 4, 4), "bicubic"),
                        ((0, 2, 4, 4), "area"), ((1, 0, 4, 4), "area"), ((1, 2, 4), "area")]:
        k, t = kiln.ones(*shape), torch.ones(*shape)
        close(KF.interpolate(k, size=3, mode=mode), TF.interpolate(t, size=3, mode=mode))
    k, t = pair((1, 2, 4, 4))
    close(KF.interpolate(k, size=0, mode="area"), TF.interpolate(t, size=0, mode="area"))
    close(KF.interpolate(k, size=kiln.tensor(3)), TF.interpolate(t, size=torch.tensor(3)))
    close(KF.interpolate(k, size=(np.int64(3), 5)), TF.interpolate(t, size=(np.int64(3), 5)))
    close(KF.interpolate(k, scale_factor=2), TF.interpolate(t, scale_factor=2))
