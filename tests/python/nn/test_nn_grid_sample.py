"""F.affine_grid and F.grid_sample against torch: 4-D (bilinear, nearest,
bicubic) and 5-D (bilinear, nearest) input, every padding mode and
align_corners, values and the gradients of input, grid and theta (float32 and
float64; float16 / bfloat16 to their precision), non-contiguous inputs, size-1
and empty cases, infinite grids, the warnings and torch's errors."""

import itertools
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as KF
from nn_compare import FLOATS, close, grad_pair, pair
from torch_compare import assert_same_error

COMBOS = list(itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [True, False]))
COMBOS_3D = list(itertools.product(["bilinear", "nearest"], ["zeros", "border", "reflection"], [True, False]))


def sample_case(dtype, mode, padding_mode, align_corners, in_shape=(2, 3, 4, 5), grid_shape=(2, 6, 7, 2),
                noncontiguous=False, spread=1.6, tol=None, grid_grad=True):
    kx, tx = pair(in_shape, dtype, requires_grad=True, noncontiguous=noncontiguous)
    kg, tg = pair(grid_shape, dtype, requires_grad=True, low=-spread, high=spread, seed=3)
    ko = KF.grid_sample(kx, kg, mode, padding_mode, align_corners)
    to = TF.grid_sample(tx, tg, mode, padding_mode, align_corners)
    tols = {} if tol is None else {"atol": tol, "rtol": tol}
    close(ko, to, **tols)
    grad_pair(ko, to)
    close(kx.grad, tx.grad, **tols)
    if grid_grad:
        close(kg.grad, tg.grad, **tols)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode, padding_mode, align_corners", COMBOS)
def test_grid_sample(mode, padding_mode, align_corners, dtype):
    # bicubic's grid gradient differentiates the cubic weights: float32 rounding differs from torch's by ~1e-5
    tol = 1e-4 if mode == "bicubic" and dtype == "float32" else None
    sample_case(dtype, mode, padding_mode, align_corners, tol=tol)


@pytest.mark.parametrize("mode, padding_mode, align_corners", COMBOS[::2])
def test_grid_sample_far_outside_noncontiguous_and_unit_sizes(mode, padding_mode, align_corners):
    sample_case("float64", mode, padding_mode, align_corners, spread=4.0)          # several reflections
    sample_case("float32", mode, padding_mode, align_corners, noncontiguous=True)
    sample_case("float64", mode, padding_mode, align_corners, in_shape=(2, 2, 1, 3))
    sample_case("float64", mode, padding_mode, align_corners, grid_shape=(2, 0, 3, 2))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode, padding_mode, align_corners", COMBOS_3D)
def test_grid_sample_5d(mode, padding_mode, align_corners, dtype):
    sample_case(dtype, mode, padding_mode, align_corners, in_shape=(2, 3, 3, 4, 5), grid_shape=(2, 2, 3, 4, 3))


@pytest.mark.parametrize("mode, padding_mode, align_corners", COMBOS_3D[::2])
def test_grid_sample_5d_far_outside_noncontiguous_and_unit_sizes(mode, padding_mode, align_corners):
    sample_case("float64", mode, padding_mode, align_corners, in_shape=(1, 2, 3, 2, 4), grid_shape=(1, 3, 2, 2, 3),
                spread=4.0)
    sample_case("float32", mode, padding_mode, align_corners, in_shape=(2, 2, 3, 4, 2), grid_shape=(2, 2, 1, 3, 3),
                noncontiguous=True)
    sample_case("float64", mode, padding_mode, align_corners, in_shape=(1, 2, 1, 3, 1), grid_shape=(1, 2, 2, 2, 3))
    sample_case("float64", mode, padding_mode, align_corners, in_shape=(1, 2, 2, 2, 2), grid_shape=(1, 0, 2, 2, 3))


# float16 / bfloat16: computed in float32 and rounded once, while torch rounds each step of its kernel to the
# reduced type; a grid kept inside the image (no coordinate near a clamp edge) agrees to the type's precision in
# value and input gradient. The grid's gradient is not compared: it jumps where a coordinate crosses a pixel
# centre, and a coordinate rounded differently there lands on the other side.
REDUCED_COMBOS = [("bilinear", "zeros", False), ("bilinear", "border", True), ("bicubic", "zeros", True),
                  ("bicubic", "reflection", False)]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("mode, padding_mode, align_corners", REDUCED_COMBOS)
def test_grid_sample_reduced_precision(mode, padding_mode, align_corners, dtype):
    tol = {"float16": 2e-2, "bfloat16": 1.5e-1}[dtype]
    sample_case(dtype, mode, padding_mode, align_corners, spread=0.8, tol=tol, grid_grad=False)
    if mode == "bilinear":
        sample_case(dtype, mode, padding_mode, align_corners, in_shape=(1, 2, 3, 4, 5), grid_shape=(1, 2, 2, 3, 3),
                    spread=0.8, tol=tol, grid_grad=False)


def test_grid_sample_infinite_grid_and_infinite_input():
    grid = np.array([[[[np.inf, 0.0], [0.0, -np.inf], [np.nan, 0.2], [2.0, 2.0]]]])
    x = np.arange(12.0).reshape(1, 1, 3, 4)
    x[0, 0, 0, 0] = np.inf                                                    # never read by the grid below
    for padding_mode in ("zeros", "border", "reflection"):
        ko = KF.grid_sample(kiln.tensor(x), kiln.tensor(grid), padding_mode=padding_mode, align_corners=False)
        to = TF.grid_sample(torch.tensor(x), torch.tensor(grid), padding_mode=padding_mode, align_corners=False)
        assert np.isfinite(ko.numpy()[0, 0, 0, 3]) == np.isfinite(to.numpy()[0, 0, 0, 3])
        close(ko[..., 3:], to[..., 3:])
    inner = np.array([[[[0.3, -0.2], [0.9, 0.9]]]])                           # far from the infinite corner
    close(KF.grid_sample(kiln.tensor(x), kiln.tensor(inner), align_corners=True),
          TF.grid_sample(torch.tensor(x), torch.tensor(inner), align_corners=True))


def test_grid_sample_bicubic_and_5d_with_infinite_and_huge_grids():
    """Non-finite positions give NaN (bicubic) or whatever torch's clamps give; huge finite ones are padded."""
    grid = np.array([[[[np.inf, 0.0], [np.nan, 0.2], [2.0, 2.0], [1e20, 0.1], [0.3, -0.4]]]])
    x = np.arange(12.0).reshape(1, 1, 3, 4)
    for padding_mode in ("zeros", "border", "reflection"):
        ko = KF.grid_sample(kiln.tensor(x), kiln.tensor(grid), "bicubic", padding_mode, False)
        to = TF.grid_sample(torch.tensor(x), torch.tensor(grid), "bicubic", padding_mode, False)
        close(ko, to)
    grid3 = np.array([[[[[2.0, 2.0, 0.5], [0.3, -0.4, 0.9], [1e20, 0.1, -0.2]]]]])
    x3 = np.arange(24.0).reshape(1, 1, 2, 3, 4)
    for mode, padding_mode in itertools.product(["bilinear", "nearest"], ["zeros", "border"]):
        close(KF.grid_sample(kiln.tensor(x3), kiln.tensor(grid3), mode, padding_mode, True),
              TF.grid_sample(torch.tensor(x3), torch.tensor(grid3), mode, padding_mode, True))


AFFINE_CASES = [((2, 3, 4, 5), (2, 2, 3)), ((1, 2, 1, 6), (1, 2, 3)), ((2, 1, 3, 4, 5), (2, 3, 4)),
                ((1, 1, 1, 2, 1), (1, 3, 4))]


@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(AFFINE_CASES)))
def test_affine_grid(case, dtype, align_corners):
    size, theta_shape = AFFINE_CASES[case]
    kt, tt = pair(theta_shape, dtype, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ko, to = KF.affine_grid(kt, size, align_corners), TF.affine_grid(tt, size, align_corners)
    close(ko, to)
    grad_pair(ko, to)
    close(kt.grad, tt.grad)


def test_affine_grid_then_grid_sample_5d():
    kt, tt = pair((2, 3, 4), "float64", requires_grad=True, low=-0.8, high=0.8)
    kx, tx = pair((2, 2, 4, 3, 5), "float64", requires_grad=True)
    ko = KF.grid_sample(kx, KF.affine_grid(kt, (2, 2, 3, 4, 2), True), align_corners=True)
    to = TF.grid_sample(tx, TF.affine_grid(tt, (2, 2, 3, 4, 2), True), align_corners=True)
    close(ko, to)
    grad_pair(ko, to)
    close(kx.grad, tx.grad)
    close(kt.grad, tt.grad)


def test_grid_sample_gradcheck():
    kx, _ = pair((1, 2, 3, 4), "float64", requires_grad=True)
    kg, _ = pair((1, 2, 3, 2), "float64", requires_grad=True, low=-1.2, high=1.2, seed=5)
    for padding_mode in ("zeros", "border", "reflection"):
        assert kiln.autograd.gradcheck(lambda x, g: KF.grid_sample(x, g, "bicubic", padding_mode, False), (kx, kg))
    kx, _ = pair((1, 1, 2, 3, 3), "float64", requires_grad=True)
    kg, _ = pair((1, 2, 1, 2, 3), "float64", requires_grad=True, low=-1.2, high=1.2, seed=5)
    assert kiln.autograd.gradcheck(lambda x, g: KF.grid_sample(x, g, "bilinear", "zeros", True), (kx, kg))


def test_affine_grid_then_grid_sample_rotation():
    angle = 0.3
    theta = np.array([[[np.cos(angle), -np.sin(angle), 0.1], [np.sin(angle), np.cos(angle), -0.2]]] * 2)
    kt, tt = kiln.tensor(theta, requires_grad=True), torch.tensor(theta, requires_grad=True)
    kx, tx = pair((2, 3, 6, 5), "float64", requires_grad=True)
    ko = KF.grid_sample(kx, KF.affine_grid(kt, (2, 3, 4, 7), False), align_corners=False)
    to = TF.grid_sample(tx, TF.affine_grid(tt, (2, 3, 4, 7), False), align_corners=False)
    close(ko, to)
    grad_pair(ko, to)
    close(kx.grad, tx.grad)
    close(kt.grad, tt.grad)


def test_default_align_corners_warns():
    kx, _ = pair((1, 1, 3, 3))
    kg, _ = pair((1, 2, 2, 2), seed=2)
    with pytest.warns(UserWarning, match="align_corners=False"):
        out = KF.grid_sample(kx, kg)
    close(out, TF.grid_sample(torch.tensor(kx.numpy()), torch.tensor(kg.numpy()), align_corners=False))
    with pytest.warns(UserWarning, match="align_corners=False"):
        KF.affine_grid(kiln.ones(1, 2, 3), (1, 1, 2, 2))
    with pytest.warns(UserWarning, match="unit-size grids"):
        KF.affine_grid(kiln.ones(1, 2, 3), (1, 1, 1, 2), align_corners=True)


def _grid_error(input_shape, grid_shape, dtypes=("float32", "float32"), **kwargs):
    kx, tx = pair(input_shape, dtypes[0])
    kg, tg = pair(grid_shape, dtypes[1], seed=2)
    kwargs.setdefault("align_corners", False)
    assert_same_error(lambda: KF.grid_sample(kx, kg, **kwargs), lambda: TF.grid_sample(tx, tg, **kwargs))


GRID_ERRORS = [
    ((2, 3, 4, 5), (2, 6, 7, 2), {"mode": "foo"}),
    ((2, 3, 4, 5), (2, 6, 7, 2), {"padding_mode": "foo"}),
    ((2, 3, 4, 5), (2, 6, 7, 3), {}),
    ((2, 3, 4, 5), (3, 6, 7, 2), {}),
    ((2, 3, 4, 5), (2, 6, 2), {}),
    ((3, 4, 5), (3, 6, 2), {}),
    ((3, 4, 5), (3, 6, 1), {}),
    ((2, 3, 0, 5), (2, 6, 7, 2), {}),
    ((2, 3, 4, 5, 6), (2, 6, 7, 8, 2), {}),
    ((2, 3, 4, 5, 6), (2, 6, 7, 3), {}),
    ((2, 3, 4, 5, 6), (1, 6, 7, 8, 3), {}),
    ((2, 3, 4, 0, 6), (2, 6, 7, 8, 3), {}),
    ((2, 3, 4, 0, 6), (2, 6, 7, 3), {}),
    ((1, 1, 4, 5), (1, 6, 1, 7, 2), {}),
    ((1, 1, 2, 2, 2, 2), (1, 1, 1, 1, 1, 4), {}),
    ((2, 3, 4, 5, 6), (2, 6, 7, 8, 3), {"mode": "bicubic"}),
    ((2, 3, 0, 5, 6), (2, 6, 7, 8, 3), {"mode": "bicubic"}),
]


@pytest.mark.parametrize("case", range(len(GRID_ERRORS)))
def test_grid_sample_errors(case):
    input_shape, grid_shape, kwargs = GRID_ERRORS[case]
    _grid_error(input_shape, grid_shape, **kwargs)


def test_grid_sample_other_errors():
    _grid_error((2, 3, 4, 5), (2, 6, 7, 2), dtypes=("float32", "float64"))
    _grid_error((2, 3, 4, 5), (2, 6, 7, 2), dtypes=("float16", "float32"))
    _grid_error((2, 3, 4, 5, 6), (2, 6, 7, 8, 3), dtypes=("float32", "float64"))
    _grid_error((2, 3, 4, 5, 6), (2, 6, 7, 8, 3), dtypes=("float32", "float64"), mode="bicubic")
    for shape, grid_shape in (((1, 1, 2, 2), (1, 1, 1, 2)), ((1, 1, 2, 2, 2), (1, 1, 1, 1, 3))):
        for dtype in ("int64", "uint8"):
            ki, ti = kiln.ones(*shape, dtype=getattr(kiln, dtype)), torch.ones(*shape, dtype=getattr(torch, dtype))
            kg = kiln.zeros(*grid_shape, dtype=getattr(kiln, dtype))
            tg = torch.zeros(*grid_shape, dtype=getattr(torch, dtype))
            assert_same_error(lambda: KF.grid_sample(ki, kg, align_corners=False),
                              lambda: TF.grid_sample(ti, tg, align_corners=False))


AFFINE_ERRORS = [
    ((2, 2, 3), (2, 3, 4, 5), "int64"),
    ((2, 3, 3), (2, 3, 4, 5), "float32"),
    ((2, 2, 3), (2, 3, 4, 5, 6), "float32"),
    ((2, 2, 3), (2, 3, 4), "float32"),
    ((2, 2, 3), (3, 3, 4, 5), "float32"),
    ((2, 2, 3), (2, 3, 0, 5), "float32"),
]


@pytest.mark.parametrize("case", range(len(AFFINE_ERRORS)))
def test_affine_grid_errors(case):
    theta_shape, size, dtype = AFFINE_ERRORS[case]
    kt = kiln.zeros(*theta_shape, dtype=getattr(kiln, dtype))
    tt = torch.zeros(*theta_shape, dtype=getattr(torch, dtype))
    assert_same_error(lambda: KF.affine_grid(kt, size, False), lambda: TF.affine_grid(tt, size, False))


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_of_an_empty_batch(mode):
    kx, tx = kiln.ones(0, 2, 3, 3), torch.ones(0, 2, 3, 3)
    kg, tg = kiln.zeros(0, 4, 1, 2), torch.zeros(0, 4, 1, 2)
    got = kiln.nn.functional.grid_sample(kx, kg, mode=mode, align_corners=True)
    want = torch.nn.functional.grid_sample(tx, tg, mode=mode, align_corners=True)
    assert tuple(got.shape) == tuple(want.shape)


def test_affine_grid_with_a_unit_size_and_align_corners_skips_the_size_check_as_torch():
    # torch warns about the unit-size grid and then (elif) never checks the other sizes
    theta = [[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]] * 3
    with pytest.warns(UserWarning, match="unit-size grids"):
        got = kiln.nn.functional.affine_grid(kiln.tensor(theta), [3, 0, 1, 3], align_corners=True)
    with pytest.warns(UserWarning):
        want = torch.nn.functional.affine_grid(torch.tensor(theta), [3, 0, 1, 3], align_corners=True)
    np.testing.assert_allclose(got.numpy(), want.numpy())
    with pytest.raises(ValueError, match="Expected non-zero, positive output size"):
        kiln.nn.functional.affine_grid(kiln.tensor(theta), [3, 0, 2, 3], align_corners=True)
