"""conv1d/conv2d and the pooling ops against torch: values and gradients over
dtypes, strides, paddings (numbers, "same", "valid"), dilations, groups,
ceil_mode, unbatched, non-contiguous and empty inputs; float64 gradchecks
(including the backward ops' own formulas); the error cases; the layers."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as KF
from nn_compare import FLOATS, REDUCED, close, grad_pair, pair
from torch_compare import assert_same_error

REDUCED_TOL = {"rtol": 2e-2, "atol": 2e-2}


def tol(dtype):
    return REDUCED_TOL if dtype in REDUCED else {}


def grads_close(kins, tins, dtype):
    for k, t in zip(kins, tins):
        if t is None:
            continue
        close(k.grad, t.grad, **tol(dtype))


# --- conv2d ---------------------------------------------------------------------------------
# (input shape, weight shape, bias, kwargs)
CONV2D_CASES = [
    ((2, 3, 8, 8), (4, 3, 3, 3), True, {}),
    ((2, 3, 8, 8), (4, 3, 3, 3), False, {"padding": 1}),
    ((1, 2, 9, 7), (3, 2, 3, 2), True, {"stride": 2, "padding": (1, 0)}),
    ((2, 4, 10, 10), (6, 2, 3, 3), True, {"groups": 2, "dilation": 2, "padding": 2}),
    ((2, 4, 7, 9), (4, 1, 3, 3), True, {"groups": 4, "stride": (2, 1)}),
    ((3, 5, 6, 6), (2, 5, 1, 1), True, {}),                                  # 1x1: the input is its own col
    ((2, 4, 6, 6), (6, 2, 1, 1), False, {"groups": 2}),
    ((2, 3, 5, 5), (2, 3, 1, 1), True, {"stride": 2}),
    ((2, 2, 6, 5), (3, 2, 2, 4), True, {"padding": "same"}),                 # even kernel: asymmetric
    ((2, 2, 6, 5), (3, 2, 3, 2), True, {"padding": "same", "dilation": (1, 3)}),
    ((2, 2, 6, 5), (3, 2, 3, 3), True, {"padding": "valid"}),
    ((3, 8, 8), (4, 3, 3, 3), True, {"padding": 1}),                         # unbatched
    ((3, 6, 6), (2, 3, 2, 2), True, {"padding": "same"}),
    ((0, 3, 8, 8), (4, 3, 3, 3), True, {}),                                  # empty batch
    ((2, 3, 4, 4), (2, 3, 4, 4), True, {}),                                  # kernel covers the input: 1x1 output
    ((2, 1, 3, 3), (2, 1, 3, 3), True, {"padding": 2, "stride": 3}),
    ((2, 3, 6, 7), (2, 3, 3, 3), True, {"padding": (1,), "stride": [2], "dilation": (2,)}),  # one value for both dims
    ((2, 4, 10, 9), (6, 2, 3, 3), True, {"groups": 2, "padding": 1}),     # planes >= 64: per-sample products
    ((3, 1, 12, 12), (3, 1, 3, 3), True, {"padding": 1}),                 # one channel: im2col in float32 too
    ((2, 1, 12, 12), (4, 1, 3, 3), False, {"padding": (1, 2), "dilation": (1, 2)}),
]


def float64_oracle(tensors):
    """torch's float64 copies of the (already rounded) reduced-precision inputs, as leaves.

    Note: torch's own float16/bfloat16 conv depends on the CPU. Where it has no native
    bfloat16 dot products (AVX2 only) its backward rounds partial sums to bfloat16 and lands
    up to 4 ulps from the exact gradient, while kiln accumulates in float32 and rounds once.
    So the reduced dtypes are judged against torch's float64 result on the same inputs,
    rounded to the dtype at the end: the same answer on every CPU."""
    return [None if t is None else t.detach().double().requires_grad_(True) for t in tensors]


def conv_case(fn_k, fn_t, in_shape, w_shape, bias, kwargs, dtype, noncontiguous=False):
    kx, tx = pair(in_shape, dtype, requires_grad=True, seed=0, noncontiguous=noncontiguous)
    kw, tw = pair(w_shape, dtype, requires_grad=True, seed=1)
    kb, tb = pair((w_shape[0],), dtype, requires_grad=True, seed=2) if bias else (None, None)
    ko = fn_k(kx, kw, kb, **kwargs)
    if dtype in REDUCED:
        tx, tw, tb = float64_oracle([tx, tw, tb])
        to = fn_t(tx, tw, tb, **kwargs)
        close(ko, to.to(getattr(torch, dtype)), **tol(dtype))
        if to.numel() == 0 and tx.numel() == 0:
            return
        grad_pair(ko, to.to(getattr(torch, dtype)))  # rounds the upstream gradient as the kiln side sees it
        for k, t in zip([kx, kw, kb], [tx, tw, tb]):
            if t is not None:
                close(k.grad, t.grad.to(getattr(torch, dtype)), **tol(dtype))
        return
    to = fn_t(tx, tw, tb, **kwargs)
    close(ko, to, **tol(dtype))
    if to.numel() == 0 and tx.numel() == 0:
        return
    grad_pair(ko, to)
    grads_close([kx, kw, kb], [tx, tw, tb], dtype)


@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("case", range(len(CONV2D_CASES)))
def test_conv2d(case, dtype):
    in_shape, w_shape, bias, kwargs = CONV2D_CASES[case]
    conv_case(KF.conv2d, TF.conv2d, in_shape, w_shape, bias, kwargs, dtype)


@pytest.mark.parametrize("case", [0, 2, 3, 8])
def test_conv2d_noncontiguous_input(case):
    in_shape, w_shape, bias, kwargs = CONV2D_CASES[case]
    conv_case(KF.conv2d, TF.conv2d, in_shape, w_shape, bias, kwargs, "float32", noncontiguous=True)


def test_conv2d_channels_last_and_strided_weight():
    kx, tx = pair((2, 3, 7, 7), seed=0)
    kx, tx = kx.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2), tx.to(memory_format=torch.channels_last)
    kw, tw = pair((3, 4, 2, 2), seed=1)
    kw, tw = kw.transpose(0, 1), tw.transpose(0, 1)  # [4, 3, 2, 2], not contiguous
    close(KF.conv2d(kx, kw, stride=2), TF.conv2d(tx, tw, stride=2))


def test_conv2d_batch_larger_than_one_im2col_chunk():
    # 3 * 9 * 128 * 128 float64 per sample is ~3.5 MB, over the 2 MiB chunk budget: one sample a chunk.
    kx, tx = pair((12, 3, 128, 128), "float64", requires_grad=True)
    kw, tw = pair((2, 3, 3, 3), "float64", requires_grad=True, seed=1)
    ko, to = KF.conv2d(kx, kw, padding=1), TF.conv2d(tx, tw, padding=1)
    close(ko, to)
    grad_pair(ko, to)
    grads_close([kx, kw], [tx, tw], "float64")


# --- conv1d ---------------------------------------------------------------------------------
CONV1D_CASES = [
    ((2, 3, 10), (4, 3, 3), True, {}),
    ((2, 4, 11), (6, 2, 3), True, {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}),
    ((3, 9), (2, 3, 4), True, {"padding": "same"}),
    ((2, 3, 9), (2, 3, 5), False, {"padding": "same", "dilation": 2}),
    ((2, 3, 9), (2, 3, 1), True, {}),
    ((0, 3, 9), (2, 3, 3), True, {"padding": "valid"}),
]


@pytest.mark.parametrize("dtype", FLOATS + ["bfloat16"])
@pytest.mark.parametrize("case", range(len(CONV1D_CASES)))
def test_conv1d(case, dtype):
    in_shape, w_shape, bias, kwargs = CONV1D_CASES[case]
    conv_case(KF.conv1d, TF.conv1d, in_shape, w_shape, bias, kwargs, dtype)


# --- gradcheck, including the double backward of the conv backward ops -----------------------
@pytest.mark.parametrize("kwargs", [{}, {"stride": 2, "padding": 1}, {"dilation": 2, "groups": 2, "padding": 1},
                                    {"padding": "same"}])
def test_conv2d_gradcheck(kwargs):
    kx, _ = pair((2, 2, 5, 5), "float64", requires_grad=True)
    kw, _ = pair((2, 2 // kwargs.get("groups", 1), 2, 3), "float64", requires_grad=True, seed=1)
    kb, _ = pair((2,), "float64", requires_grad=True, seed=2)
    assert kiln.autograd.gradcheck(lambda x, w, b: KF.conv2d(x, w, b, **kwargs), (kx, kw, kb))


def test_conv1d_gradcheck():
    kx, _ = pair((2, 2, 7), "float64", requires_grad=True)
    kw, _ = pair((3, 2, 3), "float64", requires_grad=True, seed=1)
    assert kiln.autograd.gradcheck(lambda x, w: KF.conv1d(x, w, stride=2, padding=1), (kx, kw))


def test_conv2d_double_backward_matches_torch():
    kx, tx = pair((2, 2, 5, 5), "float64", requires_grad=True)
    kw, tw = pair((3, 2, 3, 3), "float64", requires_grad=True, seed=1)
    kb, tb = pair((3,), "float64", requires_grad=True, seed=2)

    def second(lib, F, x, w, b):
        y = F.conv2d(x, w, b, padding=1, stride=2)
        (gx, gw, gb) = lib.autograd.grad((y * y).sum(), (x, w, b), create_graph=True)
        return (gx * gx).sum() + (gw * gw).sum() + (gb * gb).sum()

    ks, ts = second(kiln, KF, kx, kw, kb), second(torch, TF, tx, tw, tb)
    close(ks, ts)
    ks.backward()
    ts.backward()
    grads_close([kx, kw, kb], [tx, tw, tb], "float64")


# --- max_pool2d -----------------------------------------------------------------------------
MAX_POOL_CASES = [
    ((2, 3, 8, 8), {"kernel_size": 2}),
    ((2, 3, 9, 7), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ((1, 2, 9, 9), {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 1), "dilation": (2, 1)}),
    ((2, 2, 7, 8), {"kernel_size": 2, "ceil_mode": True}),
    ((2, 2, 10, 10), {"kernel_size": 3, "stride": 3, "padding": 1, "ceil_mode": True}),
    ((3, 6, 6), {"kernel_size": 2, "stride": 1}),                        # unbatched
    ((0, 3, 6, 6), {"kernel_size": 2}),                                   # empty batch
    ((2, 3, 5, 5), {"kernel_size": 5}),
]


@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("case", range(len(MAX_POOL_CASES)))
def test_max_pool2d(case, dtype):
    shape, kwargs = MAX_POOL_CASES[case]
    kx, tx = pair(shape, dtype, requires_grad=True)
    ko, ki = KF.max_pool2d(kx, return_indices=True, **kwargs)
    to, ti = TF.max_pool2d(tx, return_indices=True, **kwargs)
    close(ko, to)
    close(ki, ti)
    close(KF.max_pool2d(kx, **kwargs), to)
    if tx.numel():
        grad_pair(ko, to)
        close(kx.grad, tx.grad, **tol(dtype))


def test_max_pool2d_ties_nan_and_noncontiguous():
    values = np.array([[1, 1, 2, 2], [1, 1, 2, np.nan], [0, 0, 5, 5], [0, 0, 5, 5]], dtype=np.float32)
    kx, tx = kiln.tensor(values).reshape(1, 1, 4, 4), torch.tensor(values).reshape(1, 1, 4, 4)
    ko, ki = KF.max_pool2d(kx, 2, return_indices=True)
    to, ti = TF.max_pool2d(tx, 2, return_indices=True)
    close(ko, to)
    close(ki, ti)
    kx, tx = pair((2, 3, 7, 6), requires_grad=True, noncontiguous=True)
    ko, to = KF.max_pool2d(kx, 3, 2, 1), TF.max_pool2d(tx, 3, 2, 1)
    close(ko, to)
    grad_pair(ko, to)
    close(kx.grad, tx.grad)


@pytest.mark.parametrize("kwargs", [
    {"kernel_size": 2}, {"kernel_size": 3, "stride": 1, "padding": 1}, {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (2, 3), "stride": 3}, {"kernel_size": 3, "stride": (1, 2), "dilation": (1, 2), "padding": 1},
    {"kernel_size": 2, "ceil_mode": True},
])
def test_max_pool2d_wide_rows_with_ties_nan_and_inf(kwargs):
    # Wide rows reach the by-output-row loop of the inner columns (Note [max_pool2d by output rows]);
    # few distinct values make ties, and NaN and -inf are scattered through.
    rng = np.random.default_rng(3)
    values = rng.integers(0, 3, size=(2, 3, 11, 29)).astype(np.float32)
    values[rng.random(values.shape) < 0.03] = np.nan
    values[rng.random(values.shape) < 0.05] = -np.inf
    kx, tx = kiln.tensor(values), torch.tensor(values)
    ko, ki = KF.max_pool2d(kx, return_indices=True, **kwargs)
    to, ti = TF.max_pool2d(tx, return_indices=True, **kwargs)
    np.testing.assert_array_equal(ko.numpy(), to.numpy())
    np.testing.assert_array_equal(ki.numpy(), ti.numpy())
    np.testing.assert_array_equal(KF.max_pool2d(kx, **kwargs).numpy(), to.numpy())


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_max_pool2d_integers(dtype):
    values = np.random.default_rng(0).integers(0 if dtype == "uint8" else -100, 100, size=(2, 3, 7, 6))
    kx, tx = kiln.tensor(values).to(getattr(kiln, dtype)), torch.tensor(values).to(getattr(torch, dtype))
    ko, ki = KF.max_pool2d(kx, 3, 2, 1, return_indices=True)
    to, ti = TF.max_pool2d(tx, 3, 2, 1, return_indices=True)
    close(ko, to)
    close(ki, ti)


def test_max_pool2d_bool_is_not_implemented():
    kx, tx = kiln.ones(1, 2, 4, 4, dtype=kiln.bool), torch.ones(1, 2, 4, 4, dtype=torch.bool)
    assert_same_error(lambda: KF.max_pool2d(kx, 2), lambda: TF.max_pool2d(tx, 2))


def test_max_pool1d():
    kx, tx = pair((2, 3, 11), requires_grad=True)
    ko, ki = KF.max_pool1d(kx, 3, 2, 1, return_indices=True)
    to, ti = TF.max_pool1d(tx, 3, 2, 1, return_indices=True)
    close(ko, to)
    close(ki, ti)
    close(KF.max_pool1d(kx, 2, ceil_mode=True), TF.max_pool1d(tx, 2, ceil_mode=True))
    grad_pair(ko, to)
    close(kx.grad, tx.grad)


# --- avg_pool2d -----------------------------------------------------------------------------
AVG_POOL_CASES = [
    ((2, 3, 8, 8), {"kernel_size": 2}),
    ((2, 3, 9, 7), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ((2, 3, 9, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False}),
    ((1, 2, 7, 8), {"kernel_size": (3, 2), "stride": (2, 3), "padding": (1, 1), "ceil_mode": True}),
    ((1, 2, 7, 8), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False}),
    ((2, 2, 6, 6), {"kernel_size": 3, "padding": 1, "divisor_override": 5}),
    ((3, 6, 5), {"kernel_size": 2, "stride": 1}),
    ((0, 3, 6, 6), {"kernel_size": 2}),
]


@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("case", range(len(AVG_POOL_CASES)))
def test_avg_pool2d(case, dtype):
    shape, kwargs = AVG_POOL_CASES[case]
    kx, tx = pair(shape, dtype, requires_grad=True)
    ko, to = KF.avg_pool2d(kx, **kwargs), TF.avg_pool2d(tx, **kwargs)
    close(ko, to, **tol(dtype))
    if tx.numel():
        grad_pair(ko, to)
        close(kx.grad, tx.grad, **tol(dtype))


def test_avg_pool1d():
    kx, tx = pair((2, 3, 11), requires_grad=True, noncontiguous=True)
    ko, to = KF.avg_pool1d(kx, 3, 2, 1, count_include_pad=False), TF.avg_pool1d(tx, 3, 2, 1, count_include_pad=False)
    close(ko, to)
    grad_pair(ko, to)
    close(kx.grad, tx.grad)


# --- adaptive_avg_pool2d ----------------------------------------------------------------------
ADAPTIVE_CASES = [
    ((2, 3, 8, 8), (1, 1)),
    ((2, 3, 9, 7), (4, 3)),
    ((2, 3, 5, 5), (7, 8)),   # output larger than the input: overlapping windows
    ((3, 10, 6), (3, None)),
    ((0, 3, 6, 6), (2, 2)),
    ((2, 0, 6, 6), (2, 2)),
    ((2, 3, 6, 6), (0, 2)),
]


@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("case", range(len(ADAPTIVE_CASES)))
def test_adaptive_avg_pool2d(case, dtype):
    shape, size = ADAPTIVE_CASES[case]
    kx, tx = pair(shape, dtype, requires_grad=True)
    ko, to = KF.adaptive_avg_pool2d(kx, size), TF.adaptive_avg_pool2d(tx, size)
    close(ko, to, **tol(dtype))
    if to.numel():
        grad_pair(ko, to)
        close(kx.grad, tx.grad, **tol(dtype))


def test_adaptive_avg_pool1d():
    kx, tx = pair((2, 3, 10), requires_grad=True)
    ko, to = KF.adaptive_avg_pool1d(kx, 4), TF.adaptive_avg_pool1d(tx, 4)
    close(ko, to)
    grad_pair(ko, to)
    close(kx.grad, tx.grad)


# --- pooling gradchecks ---------------------------------------------------------------------
def test_pool_gradcheck():
    kx, _ = pair((2, 2, 6, 5), "float64", requires_grad=True)
    assert kiln.autograd.gradcheck(lambda x: KF.max_pool2d(x, 3, 2, 1, ceil_mode=True), (kx,))
    assert kiln.autograd.gradcheck(lambda x: KF.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                                   (kx,))
    assert kiln.autograd.gradcheck(lambda x: KF.adaptive_avg_pool2d(x, (4, 3)), (kx,))


@pytest.mark.parametrize("pool", ["avg", "max"])
def test_pool2d_double_backward(pool):
    kx, tx = pair((1, 2, 5, 5), "float64", requires_grad=True)

    def second(lib, F, x):
        y = F.avg_pool2d(x, 3, 2, 1) if pool == "avg" else F.max_pool2d(x, 3, 2, 1)
        (gx,) = lib.autograd.grad((y * y).sum(), (x,), create_graph=True)
        return (gx * gx).sum()

    ks, ts = second(kiln, KF, kx), second(torch, TF, tx)
    close(ks, ts)
    ks.backward()
    ts.backward()
    close(kx.grad, tx.grad)


# --- errors ---------------------------------------------------------------------------------
def conv_error(in_shape, w_shape, bias_shape=None, fn="conv2d", dtypes=("float32", "float32"), message=True,
               **kwargs):
    kx, tx = pair(in_shape, dtypes[0])
    kw, tw = pair(w_shape, dtypes[1])
    kb, tb = pair(bias_shape) if bias_shape else (None, None)
    assert_same_error(lambda: getattr(KF, fn)(kx, kw, kb, **kwargs), lambda: getattr(TF, fn)(tx, tw, tb, **kwargs),
                      message=message)


CONV_ERRORS = [
    ((2, 4, 8, 8), (8, 3, 3, 3), None, {}),                         # channel mismatch
    ((2, 3, 2, 2), (8, 3, 3, 3), None, {}),                         # kernel larger than the padded input
    ((2, 3, 8, 8), (8, 3, 3, 3), None, {"groups": 2}),
    ((2, 6, 8, 8), (9, 3, 3, 3), None, {"groups": 2}),              # weight not divisible by groups
    ((2, 3, 8, 8), (8, 3, 3, 3), (7,), {}),                         # bias size
    ((2, 3, 8, 8), (8, 3, 3, 3), None, {"stride": 0}),
    ((2, 3, 8, 8), (8, 3, 3, 3), None, {"padding": -1}),
    ((2, 3, 8, 8), (8, 3, 3, 3), None, {"dilation": 0}),
    ((2, 3, 8, 8), (8, 3, 3, 3), None, {"groups": 0}),
    ((2, 3, 8, 8), (8, 3, 3, 3), None, {"padding": "same", "stride": 2}),
    ((2, 3, 8, 8), (8, 3, 3, 3), None, {"padding": "foo"}),
    ((3, 8), (8, 3, 3, 3), None, {}),                                # input rank
    ((2, 3, 8, 8, 1), (8, 3, 3, 3), None, {}),
    ((3, 2, 2), (8, 3, 3, 3), None, {}),                             # unbatched, kernel too large
    ((2, 3, 8, 8), (0, 3, 3, 3), None, {}),
    ((2, 3, 8, 8), (8, 3, 3, 3), None, {"stride": (1, 2, 3)}),      # list lengths
    ((2, 3, 8, 8), (8, 3, 3, 3), None, {"stride": []}),
    ((2, 3, 8, 8), (8, 3, 3, 3), None, {"dilation": [1, 1, 1]}),
    ((2, 3, 8, 8), (8, 3, 3, 3), None, {"padding": "same", "dilation": [1, 1, 1]}),
]


@pytest.mark.parametrize("case", range(len(CONV_ERRORS)))
def test_conv2d_errors(case):
    in_shape, w_shape, bias_shape, kwargs = CONV_ERRORS[case]
    conv_error(in_shape, w_shape, bias_shape, **kwargs)


def test_conv_errors_other():
    conv_error((2, 4, 8), (8, 3, 3), fn="conv1d")
    conv_error((2, 3, 2), (8, 3, 3), fn="conv1d")
    conv_error((2, 3, 8, 8), (8, 3, 3, 3), dtypes=("float32", "float64"), message=False)
    conv_error((2, 3, 9), (8, 3, 3), fn="conv1d", stride=(1, 1))
    kx, tx = pair((2, 3, 8, 8))
    kw, tw = pair((4, 3, 3, 3))
    kb, tb = pair((4,), "float64")
    assert_same_error(lambda: KF.conv2d(kx, kw, kb), lambda: TF.conv2d(tx, tw, tb))
    conv_error((2, 3, 8, 8), (8, 3, 3), message=False)               # weight rank: torch's words are odd here


POOL_ERRORS = [
    ("max_pool2d", (2, 3, 8, 8), {"kernel_size": 3, "padding": 2}),
    ("max_pool2d", (2, 3, 8, 8), {"kernel_size": 0}),
    ("max_pool2d", (2, 3, 8, 8), {"kernel_size": 2, "stride": 0}),
    ("max_pool2d", (2, 3, 8, 8), {"kernel_size": 2, "dilation": 0}),
    ("max_pool2d", (2, 3, 8, 8), {"kernel_size": 2, "padding": -1}),
    ("max_pool2d", (2, 3, 8, 8), {"kernel_size": (2, 2, 2)}),
    ("max_pool2d", (1, 1, 2, 2), {"kernel_size": 3}),
    ("max_pool2d", (8, 8), {"kernel_size": 2}),
    ("max_pool2d", (2, 0, 8, 8), {"kernel_size": 2}),
    ("avg_pool2d", (2, 3, 8, 8), {"kernel_size": 3, "padding": 2}),
    ("avg_pool2d", (2, 3, 8, 8), {"kernel_size": 2, "divisor_override": 0}),
    ("avg_pool2d", (1, 1, 2, 2), {"kernel_size": 3}),
    ("avg_pool2d", (2, 0, 8, 8), {"kernel_size": 2}),
    ("avg_pool2d", (8, 8), {"kernel_size": 2}),
    ("adaptive_avg_pool2d", (2, 3, 8, 8), {"output_size": (-1, 2)}),
    ("adaptive_avg_pool2d", (8, 8), {"output_size": 2}),
    ("adaptive_avg_pool2d", (2, 3, 0, 8), {"output_size": 2}),
    ("adaptive_avg_pool2d", (2, 3, 8, 8), {"output_size": (2, 2, 2)}),
    ("max_pool1d", (2, 3, 8), {"kernel_size": 3, "padding": 2}),
    ("adaptive_avg_pool1d", (2, 3, 8), {"output_size": (2, 2)}),
]


@pytest.mark.parametrize("case", range(len(POOL_ERRORS)))
def test_pool_errors(case):
    name, shape, kwargs = POOL_ERRORS[case]
    kx, tx = pair(shape)
    assert_same_error(lambda: getattr(KF, name)(kx, **kwargs), lambda: getattr(TF, name)(tx, **kwargs))


def test_max_pool2d_backward_rejects_out_of_range_indices():
    kx, _ = pair((1, 1, 4, 4))
    grad = kiln.ones(1, 1, 2, 2)
    bad = kiln.tensor(np.array([0, 1, 16, 3], dtype=np.int64)).reshape(1, 1, 2, 2)
    with pytest.raises(IndexError, match="out of range"):
        kiln._C._functions.max_pool2d_with_indices_backward(grad, kx, [2, 2], [2, 2], [0, 0], [1, 1], False, bad)


# --- the layers -----------------------------------------------------------------------------
def test_layers_match_torch():
    from frontend_ops import load_from_torch
    torch.manual_seed(0)
    tmodel = torch.nn.Sequential(
        torch.nn.Conv2d(3, 6, 3, padding=1, groups=3), torch.nn.MaxPool2d(2, ceil_mode=True),
        torch.nn.Conv2d(6, 4, 2, padding="same", dilation=2), torch.nn.AvgPool2d(2, 1),
        torch.nn.AdaptiveAvgPool2d((2, 3)))
    kmodel = kiln.nn.Sequential(
        kiln.nn.Conv2d(3, 6, 3, padding=1, groups=3), kiln.nn.MaxPool2d(2, ceil_mode=True),
        kiln.nn.Conv2d(6, 4, 2, padding="same", dilation=2), kiln.nn.AvgPool2d(2, 1),
        kiln.nn.AdaptiveAvgPool2d((2, 3)))
    load_from_torch(kmodel, tmodel)
    kx, tx = pair((2, 3, 9, 9), requires_grad=True)
    ko, to = kmodel(kx), tmodel(tx)
    close(ko, to)
    grad_pair(ko, to)
    close(kx.grad, tx.grad)
    for (name, kp), (_, tp) in zip(kmodel.named_parameters(), tmodel.named_parameters()):
        close(kp.grad, tp.grad)

    t1 = torch.nn.Sequential(torch.nn.Conv1d(2, 3, 3, stride=2), torch.nn.MaxPool1d(2), torch.nn.AvgPool1d(1),
                             torch.nn.AdaptiveAvgPool1d(2))
    k1 = kiln.nn.Sequential(kiln.nn.Conv1d(2, 3, 3, stride=2), kiln.nn.MaxPool1d(2), kiln.nn.AvgPool1d(1),
                            kiln.nn.AdaptiveAvgPool1d(2))
    load_from_torch(k1, t1)
    kx, tx = pair((2, 2, 17))
    close(k1(kx), t1(tx))


# --- float32 on oneDNN: MNIST-CNN shapes, thread counts ---------------------------------------
@pytest.mark.parametrize("shapes", [((64, 1, 28, 28), (32, 1, 3, 3)), ((16, 32, 14, 14), (64, 32, 3, 3)),
                                    ((4, 20, 9, 9), (6, 20, 3, 3)), ((3, 16, 11, 10), (8, 4, 3, 2))])
def test_conv2d_float32_against_float64(shapes):
    # oneDNN's float32 products (Note [Convolution on oneDNN]) against torch's float64 result.
    in_shape, w_shape = shapes
    groups = in_shape[1] // w_shape[1]
    kx, tx = pair(in_shape, requires_grad=True)
    kw, tw = pair(w_shape, requires_grad=True, seed=1)
    kb, tb = pair((w_shape[0],), requires_grad=True, seed=2)
    t64 = [t.detach().double().requires_grad_() for t in (tx, tw, tb)]
    ko = KF.conv2d(kx, kw, kb, padding=1, stride=(1, 2) if groups > 1 else 1, groups=groups)
    to = TF.conv2d(*t64, padding=1, stride=(1, 2) if groups > 1 else 1, groups=groups)
    close(ko, to.float(), rtol=1e-4, atol=1e-4)
    grad_pair(ko, to)
    for k, t in zip((kx, kw, kb), t64):
        close(k.grad, t.grad.float(), rtol=1e-4, atol=1e-3)


def test_conv2d_results_do_not_depend_on_thread_count():
    # The samples are split by size alone and each chunk runs on one thread.
    kx, _ = pair((32, 32, 14, 14), requires_grad=True)
    kw, _ = pair((64, 32, 3, 3), requires_grad=True, seed=1)
    kg, _ = pair((32, 64, 14, 14), seed=2)
    before = kiln.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            kiln.set_num_threads(threads)
            kx.grad = None
            kw.grad = None
            y = KF.conv2d(kx, kw, padding=1)
            y.backward(kg)
            results.append([np.asarray(t.detach().numpy()).copy() for t in (y, kx.grad, kw.grad)])
    finally:
        kiln.set_num_threads(before)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


# --- integer dtypes ----------------------------------------------------------------------------
def int_pair(shape, dtype, low, high, seed=0):
    values = np.random.default_rng(seed).integers(low, high, size=shape)
    return kiln.tensor(values).to(getattr(kiln, dtype)), torch.tensor(values).to(getattr(torch, dtype))


INTS = ["int8", "int16", "int32", "int64", "uint8"]


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("kwargs", [{}, {"padding": 1, "stride": 2}, {"groups": 2, "dilation": 2, "padding": 2}])
def test_conv2d_integers(dtype, kwargs):
    # torch runs integer convolutions (slow_conv2d); int8/uint8 sums wrap, as kiln's.
    low, high = (0, 60) if dtype == "uint8" else (-60, 60)
    kx, tx = int_pair((2, 4, 7, 6), dtype, low, high)
    kw, tw = int_pair((6, 4 // kwargs.get("groups", 1), 3, 3), dtype, low, high, seed=1)
    kb, tb = int_pair((6,), dtype, low, high, seed=2)
    if "dilation" in kwargs and dtype != "int64":         # torch's dilated kernel has no other integer dtype
        assert_same_error(lambda: KF.conv2d(kx, kw, kb, **kwargs), lambda: TF.conv2d(tx, tw, tb, **kwargs))
        return
    close(KF.conv2d(kx, kw, kb, **kwargs), TF.conv2d(tx, tw, tb, **kwargs), rtol=0, atol=0)
    close(KF.conv2d(kx, kw, **kwargs), TF.conv2d(tx, tw, **kwargs), rtol=0, atol=0)


def test_conv1d_and_unbatched_integers():
    kx, tx = int_pair((2, 3, 9), "int64", -1000, 1000)
    kw, tw = int_pair((4, 3, 2), "int64", -1000, 1000, seed=1)
    close(KF.conv1d(kx, kw, stride=2, padding=1), TF.conv1d(tx, tw, stride=2, padding=1), rtol=0, atol=0)
    kx, tx = int_pair((3, 5, 5), "int32", -9, 9)
    kw, tw = int_pair((2, 3, 3, 3), "int32", -9, 9, seed=1)
    close(KF.conv2d(kx, kw, padding="same"), TF.conv2d(tx, tw, padding="same"), rtol=0, atol=0)
    assert_same_error(lambda: KF.conv2d(kx, kw, dilation=(1, 2)), lambda: TF.conv2d(tx, tw, dilation=(1, 2)))
    kx, tx = int_pair((2, 3, 9), "int16", -9, 9)
    kw, tw = int_pair((4, 3, 2), "int16", -9, 9, seed=1)
    close(KF.conv1d(kx, kw, stride=2), TF.conv1d(tx, tw, stride=2), rtol=0, atol=0)
    assert_same_error(lambda: KF.conv1d(kx, kw, dilation=2), lambda: TF.conv1d(tx, tw, dilation=2))


def test_conv2d_bool_and_mixed_integer_errors():
    kx, tx = int_pair((2, 3, 5, 5), "int64", 0, 2)
    kw, tw = int_pair((2, 3, 3, 3), "int64", 0, 2)
    assert_same_error(lambda: KF.conv2d(kx.bool(), kw.bool()), lambda: TF.conv2d(tx.bool(), tw.bool()))
    assert_same_error(lambda: KF.conv2d(kx, kw.to(kiln.int32)), lambda: TF.conv2d(tx, tw.to(torch.int32)),
                      message=False)


@pytest.mark.parametrize("kwargs", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                    {"kernel_size": 3, "padding": 1, "count_include_pad": False, "ceil_mode": True},
                                    {"kernel_size": 2, "divisor_override": 3}])
def test_avg_pool2d_int64(kwargs):
    # torch's CPU avg_pool2d takes int64 (an int64 sum, truncating division); negatives check the rounding.
    kx, tx = int_pair((2, 3, 7, 6), "int64", -50, 50)
    close(KF.avg_pool2d(kx, **kwargs), TF.avg_pool2d(tx, **kwargs), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "uint8", "bool"])
def test_avg_pool2d_other_integers_not_implemented(dtype):
    kx, tx = int_pair((2, 3, 6, 6), "int64", 0, 2)
    kx, tx = kx.to(getattr(kiln, dtype)), tx.to(getattr(torch, dtype))
    assert_same_error(lambda: KF.avg_pool2d(kx, 2), lambda: TF.avg_pool2d(tx, 2))


@pytest.mark.parametrize("dtype", INTS + ["bool"])
def test_adaptive_avg_pool2d_integers_not_implemented(dtype):
    kx, tx = int_pair((2, 3, 6, 6), "int64", 0, 2)
    kx, tx = kx.to(getattr(kiln, dtype)), tx.to(getattr(torch, dtype))
    assert_same_error(lambda: KF.adaptive_avg_pool2d(kx, 3), lambda: TF.adaptive_avg_pool2d(tx, 3))
    assert_same_error(lambda: KF.adaptive_avg_pool2d(kx, 4), lambda: TF.adaptive_avg_pool2d(tx, 4))


# --- adaptive_avg_pool2d's double backward -------------------------------------------------------
def test_adaptive_avg_pool2d_double_backward():
    kx, tx = pair((2, 2, 7, 5), "float64", requires_grad=True)

    def second(lib, F, x):
        y = F.adaptive_avg_pool2d(x, (3, 4))
        (gx,) = lib.autograd.grad((y * y * y).sum(), (x,), create_graph=True)
        return (gx * gx).sum()

    ks, ts = second(kiln, KF, kx), second(torch, TF, tx)
    close(ks, ts)
    ks.backward()
    ts.backward()
    close(kx.grad, tx.grad)
    assert kiln.autograd.gradgradcheck(lambda x: KF.adaptive_avg_pool2d(x, (3, 2)), (kx,))
    # The backward op's own formulas: linear in grad_output, zero in self.
    kg, tg = pair((2, 2, 3, 4), "float64", requires_grad=True, seed=4)
    kin, tin = pair((2, 2, 7, 5), "float64", requires_grad=True, seed=5)
    ko = kiln._C._functions._adaptive_avg_pool2d_backward(kg, kin)
    to = torch.ops.aten._adaptive_avg_pool2d_backward(tg, tin)
    close(ko, to)
    grad_pair(ko, to)
    close(kg.grad, tg.grad)
    assert tin.grad is None or not tin.grad.any()
    assert kin.grad is None or not kin.grad.numpy().any()


# --- max_pool2d without indices --------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "int32", "uint8"])
@pytest.mark.parametrize("case", [1, 2, 4, 5, 6])
def test_max_pool2d_without_grad_matches(case, dtype):
    shape, kwargs = MAX_POOL_CASES[case]
    if dtype in ("int32", "uint8"):
        kx, tx = int_pair(shape, dtype, 0, 100)
    else:
        kx, tx = pair(shape, dtype)
    expected = TF.max_pool2d(tx, **kwargs)
    close(KF.max_pool2d(kx, **kwargs), expected)                        # no grad needed: no indices
    close(kiln._C._functions._max_pool2d_without_indices(kx, **kwargs), expected)
    if dtype.startswith("float"):
        kr = kx.clone().requires_grad_(True)
        with kiln.no_grad():
            out = KF.max_pool2d(kr, **kwargs)
        assert not out.requires_grad
        close(out, expected)


def test_max_pool2d_without_indices_errors():
    kx, tx = pair((2, 3, 8, 8))
    f = kiln._C._functions._max_pool2d_without_indices
    assert_same_error(lambda: f(kx, 3, [], 2), lambda: TF.max_pool2d(tx, 3, padding=2))
    assert_same_error(lambda: f(kx.bool(), 2), lambda: TF.max_pool2d(tx.bool(), 2))
