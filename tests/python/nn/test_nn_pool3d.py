"""conv3d, the 3-D pools, adaptive_max_pool1d/2d/3d and their layers against
torch: values, indices, gradients of every differentiable input (float32 and
float64), unbatched and non-contiguous inputs, torch's errors, reprs and the
Conv3d initialisation."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as KF
from frontend_ops import load_from_torch
from nn_compare import FLOATS, close, grad_pair, pair
from torch_compare import as_kiln_text, assert_same_error, raised


def run_case(name, shape, dtype, args=(), kwargs=None, noncontiguous=False, extra=()):
    """kiln.F.<name> vs torch.F.<name> on the same input (and extra tensor inputs): outputs
    (indices exactly) and the gradients of every tensor input under a random upstream gradient."""
    kwargs = kwargs or {}
    kx, tx = pair(shape, dtype, requires_grad=True, noncontiguous=noncontiguous)
    ks, ts = [kx], [tx]
    for i, extra_shape in enumerate(extra):
        if extra_shape is None:
            ks.append(None), ts.append(None)
            continue
        k, t = pair(extra_shape, dtype, requires_grad=True, seed=10 + i)
        ks.append(k), ts.append(t)
    ko = getattr(KF, name)(*ks, *args, **kwargs)
    to = getattr(TF, name)(*ts, *args, **kwargs)
    if isinstance(to, tuple):
        close(ko[1], to[1], rtol=0, atol=0)
        ko, to = ko[0], to[0]
    close(ko, to)
    grad_pair(ko, to)
    for k, t in zip(ks, ts):
        if t is not None:
            close(k.grad, t.grad)
    return ko


# --- conv3d -------------------------------------------------------------------------------------
CONV3D_CASES = [
    ((2, 3, 5, 6, 4), (4, 3, 3, 3, 2), True, {}),
    ((2, 4, 7, 6, 5), (6, 2, 3, 2, 2), True, {"stride": (2, 1, 2), "padding": (1, 2, 0), "dilation": (2, 1, 1),
                                              "groups": 2}),
    ((1, 2, 6, 5, 5), (3, 2, 2, 3, 4), False, {"padding": "same", "dilation": (2, 1, 1)}),   # asymmetric 'same'
    ((2, 2, 4, 5, 5), (3, 2, 1, 3, 3), True, {"padding": "valid", "stride": 2}),
    ((3, 6, 5, 5), (3, 3, 2, 3, 3), True, {"padding": 1}),                                 # unbatched
    ((0, 3, 4, 4, 4), (2, 3, 2, 2, 2), True, {}),                                          # empty batch
    ((2, 4, 3, 3, 3), (4, 1, 3, 3, 3), True, {"groups": 4, "padding": [1]}),                # depthwise
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(CONV3D_CASES)))
def test_conv3d(case, dtype):
    in_shape, w_shape, bias, kwargs = CONV3D_CASES[case]
    out = run_case("conv3d", in_shape, dtype, kwargs=kwargs, extra=(w_shape, (w_shape[0],) if bias else None))
    assert out.is_contiguous()


def test_conv3d_noncontiguous_input():
    run_case("conv3d", (2, 3, 4, 5, 6), "float32", kwargs={"padding": 1}, noncontiguous=True,
             extra=((2, 3, 3, 3, 3), (2,)))


def conv3d_error(in_shape, w_shape, bias_shape=None, message=True, **kwargs):
    kx, tx = pair(in_shape)
    kw, tw = pair(w_shape)
    kb, tb = pair(bias_shape) if bias_shape else (None, None)
    assert_same_error(lambda: KF.conv3d(kx, kw, kb, **kwargs), lambda: TF.conv3d(tx, tw, tb, **kwargs),
                      message=message)


CONV3D_ERRORS = [
    ((3, 5), (4, 3, 3, 3, 3), None, {}),                              # input rank
    ((2, 3, 5, 5, 5), (4, 3, 3, 3), None, {}),                        # weight rank (torch words it via stride)
    ((2, 2, 5, 5, 5), (4, 3, 3, 3, 3), None, {}),                     # channels
    ((2, 3, 2, 2, 2), (4, 3, 3, 3, 3), None, {}),                     # kernel larger than the padded input
    ((2, 3, 5, 5, 5), (4, 3, 3, 3, 3), None, {"stride": 0}),
    ((2, 3, 5, 5, 5), (4, 3, 3, 3, 3), None, {"padding": -1}),
    ((2, 3, 5, 5, 5), (4, 3, 3, 3, 3), None, {"dilation": 0}),
    ((2, 3, 5, 5, 5), (4, 3, 3, 3, 3), None, {"groups": 0}),
    ((2, 3, 5, 5, 5), (4, 3, 3, 3, 3), None, {"padding": "same", "stride": 2}),
    ((2, 3, 5, 5, 5), (4, 3, 3, 3, 3), None, {"padding": "foo"}),
    ((2, 3, 5, 5, 5), (4, 3, 3, 3, 3), (3,), {}),                     # bias size
    ((2, 3, 5, 5, 5), (3, 3, 3, 3, 3), None, {"groups": 3}),
    ((2, 4, 5, 5, 5), (4, 2, 3, 3, 3), None, {"groups": 3}),          # weight not divisible by groups
    ((2, 3, 5, 5, 5), (4, 3, 3, 3, 3), None, {"stride": (1, 1)}),     # list lengths
]


@pytest.mark.parametrize("case", range(len(CONV3D_ERRORS)))
def test_conv3d_errors(case):
    in_shape, w_shape, bias_shape, kwargs = CONV3D_ERRORS[case]
    conv3d_error(in_shape, w_shape, bias_shape, **kwargs)


# --- max_pool3d / avg_pool3d ----------------------------------------------------------------------
MAX_CASES = [
    ((2, 3, 6, 5, 7), (2,), {}),
    ((2, 3, 6, 5, 7), ((3, 2, 3), (2, 1, 2), (1, 1, 0), (1, 2, 1)), {"ceil_mode": True}),
    ((3, 7, 5, 6), (3, 2, 1, 2), {"ceil_mode": True}),                                     # unbatched
    ((1, 2, 5, 5, 5), (2,), {"stride": 2, "ceil_mode": True}),                             # ceil: partial windows
    ((2, 2, 4, 4, 4), (3, 1, 1), {}),
    ((0, 2, 4, 4, 4), (2,), {}),                                                            # empty batch
]


@pytest.mark.parametrize("return_indices", [False, True])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(MAX_CASES)))
def test_max_pool3d(case, dtype, return_indices):
    shape, args, kwargs = MAX_CASES[case]
    run_case("max_pool3d", shape, dtype, args, {**kwargs, "return_indices": return_indices})


def test_max_pool3d_ties_noncontiguous_and_infinities():
    run_case("max_pool3d", (2, 3, 4, 5, 6), "float32", (2, 1), {"return_indices": True}, noncontiguous=True)
    values = np.array([[1.0, 1.0, 2.0, 2.0], [-np.inf, -np.inf, np.inf, 0.0]]).reshape(1, 1, 2, 2, 2)
    kx, tx = kiln.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    (kv, ki), (tv, ti) = KF.max_pool3d(kx, 2, 1, return_indices=True), TF.max_pool3d(tx, 2, 1, return_indices=True)
    close(kv, tv)
    close(ki, ti, rtol=0, atol=0)
    kv.sum().backward(), tv.sum().backward()
    close(kx.grad, tx.grad)


AVG_CASES = [
    ((2, 3, 6, 5, 7), (2,), {}),
    ((2, 3, 6, 5, 7), ((3, 2, 3), (2, 1, 2), (1, 1, 0)), {"ceil_mode": True, "count_include_pad": False}),
    ((2, 3, 6, 5, 7), ((3, 2, 3), (2, 1, 2), (1, 1, 1)), {"ceil_mode": True}),
    ((2, 3, 6, 5, 7), (3, 2, 1), {"divisor_override": 5}),
    ((3, 7, 5, 6), (3, 2, 1), {"count_include_pad": False}),                                # unbatched
    ((1, 2, 5, 5, 5), (2,), {"stride": [], "ceil_mode": True}),                              # [] stride: kernel
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(AVG_CASES)))
def test_avg_pool3d(case, dtype):
    shape, args, kwargs = AVG_CASES[case]
    run_case("avg_pool3d", shape, dtype, args, kwargs)


def test_avg_pool3d_noncontiguous():
    run_case("avg_pool3d", (2, 3, 4, 5, 6), "float64", (3, 2, 1), noncontiguous=True)


# --- adaptive pools -------------------------------------------------------------------------------
ADAPTIVE_CASES = [
    ("adaptive_avg_pool3d", (2, 3, 6, 5, 7), ((4, 3, 5),), {}),
    ("adaptive_avg_pool3d", (3, 6, 5, 7), ((8, None, 2),), {}),                             # upsampling, None
    ("adaptive_avg_pool3d", (2, 2, 4, 4, 4), (1,), {}),
    ("adaptive_max_pool3d", (2, 3, 6, 5, 7), ((4, 3, 5),), {"return_indices": True}),
    ("adaptive_max_pool3d", (3, 6, 5, 7), ((8, None, 2),), {"return_indices": True}),
    ("adaptive_max_pool3d", (2, 2, 4, 4, 4), (1,), {}),
    ("adaptive_max_pool2d", (2, 3, 6, 7), ((4, 3),), {"return_indices": True}),
    ("adaptive_max_pool2d", (3, 6, 7), ((None, 9),), {"return_indices": True}),
    ("adaptive_max_pool2d", (3, 6, 7), (2,), {}),
    ("adaptive_max_pool1d", (2, 3, 7), (4,), {"return_indices": True}),
    ("adaptive_max_pool1d", (6, 7), (9, True), {}),
    ("adaptive_max_pool1d", (2, 6, 7), ((3,),), {}),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(ADAPTIVE_CASES)))
def test_adaptive_pools(case, dtype):
    name, shape, args, kwargs = ADAPTIVE_CASES[case]
    run_case(name, shape, dtype, args, kwargs)


def test_adaptive_pools_noncontiguous_and_empty_outputs():
    run_case("adaptive_max_pool3d", (2, 3, 4, 5, 6), "float32", ((2, 3, 4), True), noncontiguous=True)
    run_case("adaptive_avg_pool3d", (2, 3, 4, 5, 6), "float32", ((3, 2, 5),), noncontiguous=True)
    for name in ("adaptive_max_pool3d", "adaptive_avg_pool3d"):
        kx, tx = pair((2, 3, 4, 4, 4))
        close(getattr(KF, name)(kx, 0), getattr(TF, name)(tx, 0))
        kx, tx = pair((0, 4, 4, 4))  # unbatched with no channels: an empty result, as torch
        close(getattr(KF, name)(kx, 2), getattr(TF, name)(tx, 2))


POOL_ERRORS = [
    ("max_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 3, "padding": 2}),
    ("max_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 3, "padding": (1, 2, 1), "dilation": 2}),
    ("max_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 3, "stride": 0}),
    ("max_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 0, "stride": 1}),
    ("max_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 2, "stride": -1}),
    ("max_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 2, "dilation": 0}),
    ("max_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 2, "padding": -1}),
    ("max_pool3d", (2, 3, 5, 5, 5), {"kernel_size": (2, 2)}),
    ("max_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 2, "stride": (1, 1)}),
    ("max_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 2, "padding": (1, 1)}),
    ("max_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 2, "dilation": (1, 1)}),
    ("max_pool3d", (1, 1, 2, 2, 2), {"kernel_size": 3}),
    ("max_pool3d", (2, 5, 5), {"kernel_size": 2}),
    ("max_pool3d", (1, 1, 1, 5, 5, 5), {"kernel_size": 2}),
    ("max_pool3d", (1, 0, 5, 5, 5), {"kernel_size": 2}),
    ("max_pool3d", (1, 1, 5, 0, 5), {"kernel_size": 2}),
    ("avg_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 3, "padding": 2}),
    ("avg_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 2, "padding": (1, 2, 1)}),
    ("avg_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 3, "stride": 0}),
    ("avg_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 0, "stride": 1}),
    ("avg_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 2, "divisor_override": 0}),
    ("avg_pool3d", (2, 3, 5, 5, 5), {"kernel_size": (2, 2)}),
    ("avg_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 2, "stride": (1, 1)}),
    ("avg_pool3d", (2, 3, 5, 5, 5), {"kernel_size": 2, "padding": (1, 1)}),
    ("avg_pool3d", (1, 1, 2, 2, 2), {"kernel_size": 3, "padding": 1}),
    ("avg_pool3d", (2, 5, 5), {"kernel_size": 2}),
    ("avg_pool3d", (1, 0, 5, 5, 5), {"kernel_size": 2}),
    ("adaptive_avg_pool3d", (2, 5, 5), {"output_size": 2}),
    ("adaptive_avg_pool3d", (2, 3, 5, 5, 5), {"output_size": (2, 2)}),
    ("adaptive_avg_pool3d", (2, 3, 5, 5, 5), {"output_size": -1}),
    ("adaptive_avg_pool3d", (2, 0, 4, 4, 4), {"output_size": 2}),
    ("adaptive_avg_pool3d", (1, 2, 0, 4, 4), {"output_size": 2}),
    ("adaptive_max_pool3d", (2, 5, 5), {"output_size": 2}),
    ("adaptive_max_pool3d", (2, 3, 5, 5, 5), {"output_size": (2, 2)}),
    ("adaptive_max_pool3d", (2, 3, 5, 5, 5), {"output_size": -1}),
    ("adaptive_max_pool3d", (1, 2, 0, 4, 4), {"output_size": 2}),
    ("adaptive_max_pool2d", (5, 5), {"output_size": 2}),
    ("adaptive_max_pool2d", (1, 0, 5), {"output_size": 2}),
    ("adaptive_max_pool2d", (1, 5, 5), {"output_size": -1}),
    ("adaptive_max_pool1d", (2, 3, 7), {"output_size": (2, 3)}),
    ("adaptive_max_pool1d", (2, 3, 7), {"output_size": -1}),
    ("adaptive_max_pool1d", (2, 3, 0), {"output_size": 2}),
    ("adaptive_max_pool1d", (7,), {"output_size": 2}),
    ("adaptive_max_pool1d", (2, 3, 7), {"output_size": None}),
]


@pytest.mark.parametrize("case", range(len(POOL_ERRORS)))
def test_pool_errors(case):
    name, shape, kwargs = POOL_ERRORS[case]
    kx, tx = pair(shape)
    assert_same_error(lambda: getattr(KF, name)(kx, **kwargs), lambda: getattr(TF, name)(tx, **kwargs))


def test_avg_pool3d_of_bool_is_not_implemented():
    error = raised(lambda: KF.avg_pool3d(kiln.ones(1, 1, 2, 2, 2, dtype=kiln.bool), 2))
    assert isinstance(error, NotImplementedError) and "avg_pool3d" in str(error)


# --- the layers -----------------------------------------------------------------------------------
def test_layers_match_torch():
    torch.manual_seed(0)

    def build(nn):
        return nn.Sequential(
            nn.Conv3d(2, 4, 3, padding=1, groups=2), nn.MaxPool3d(2, ceil_mode=True),
            nn.Conv3d(4, 4, (2, 1, 3), padding="same", dilation=(2, 1, 1), bias=False), nn.AvgPool3d(2, 1),
            nn.Conv3d(4, 3, 1, padding_mode="reflect", padding=1), nn.AdaptiveMaxPool3d((2, 3, 2)),
            nn.AdaptiveAvgPool3d(1))

    tmodel, kmodel = build(torch.nn), build(kiln.nn)
    load_from_torch(kmodel, tmodel)
    kx, tx = pair((2, 2, 5, 6, 7), requires_grad=True)
    ko, to = kmodel(kx), tmodel(tx)
    close(ko, to)
    grad_pair(ko, to)
    close(kx.grad, tx.grad)
    for (_, kp), (_, tp) in zip(kmodel.named_parameters(), tmodel.named_parameters()):
        close(kp.grad, tp.grad)
    kx, tx = pair((2, 3, 9))
    for size in (4, (2,)):
        kv, ki = kiln.nn.AdaptiveMaxPool1d(size, True)(kx)
        tv, ti = torch.nn.AdaptiveMaxPool1d(size, True)(tx)
        close(kv, tv), close(ki, ti)
    kx, tx = pair((2, 3, 9, 8))
    close(kiln.nn.AdaptiveMaxPool2d((3, None))(kx), torch.nn.AdaptiveMaxPool2d((3, None))(tx))
    kx, tx = pair((2, 3, 5, 6, 7))
    kv, ki = kiln.nn.MaxPool3d(3, 2, 1, return_indices=True)(kx)
    tv, ti = torch.nn.MaxPool3d(3, 2, 1, return_indices=True)(tx)
    close(kv, tv), close(ki, ti)
    close(kiln.nn.AvgPool3d(3, 2, 1, count_include_pad=False, divisor_override=4)(kx),
          torch.nn.AvgPool3d(3, 2, 1, count_include_pad=False, divisor_override=4)(tx))


LAYER_REPRS = [
    lambda nn: nn.Conv3d(2, 4, 3),
    lambda nn: nn.Conv3d(2, 4, (1, 2, 3), stride=2, padding=1, dilation=(1, 2, 1), bias=False, groups=2,
                         padding_mode="circular"),
    lambda nn: nn.Conv3d(2, 4, 2, padding="same"),
    lambda nn: nn.MaxPool3d(2),
    lambda nn: nn.MaxPool3d((1, 2, 3), 1, 0, 2, True, True),
    lambda nn: nn.AvgPool3d(2),
    lambda nn: nn.AvgPool3d((1, 2, 3), 1, 0, True, False, 3),
    lambda nn: nn.AdaptiveAvgPool3d(2),
    lambda nn: nn.AdaptiveAvgPool3d((1, None, 3)),
    lambda nn: nn.AdaptiveMaxPool3d((1, 2, 3)),
    lambda nn: nn.AdaptiveMaxPool2d(3, True),
    lambda nn: nn.AdaptiveMaxPool1d(3),
]


@pytest.mark.parametrize("case", range(len(LAYER_REPRS)))
def test_layer_reprs(case):
    assert repr(LAYER_REPRS[case](kiln.nn)) == as_kiln_text(repr(LAYER_REPRS[case](torch.nn)))


def test_conv3d_layer_initialisation_and_errors():
    k, t = kiln.nn.Conv3d(8, 256, 3), torch.nn.Conv3d(8, 256, 3)
    assert tuple(k.weight.shape) == tuple(t.weight.shape) and tuple(k.bias.shape) == (256,)
    bound = 1 / math.sqrt(8 * 27)  # kaiming_uniform(a=sqrt(5)) and the bias share the bound 1 / sqrt(fan_in)
    for kp, tp in ((k.weight, t.weight), (k.bias, t.bias)):
        kv, tv = kp.detach().numpy().astype(np.float64), tp.detach().numpy().astype(np.float64)
        assert np.abs(kv).max() <= bound and np.abs(kv).max() > 0.9 * bound
        assert abs(kv.std() - tv.std()) < 0.15 * tv.std()
    assert kiln.nn.Conv3d(2, 4, 3, dtype=kiln.float64).weight.dtype == kiln.float64
    for kwargs in ({"groups": 2}, {"padding": "same", "stride": 2}, {"padding": "bad"}, {"padding_mode": "bad"}):
        assert_same_error(lambda: kiln.nn.Conv3d(3, 4, 3, **kwargs), lambda: torch.nn.Conv3d(3, 4, 3, **kwargs),
                          message=False)


@pytest.mark.parametrize("name", ["Conv3d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
                                  "AdaptiveMaxPool2d", "AdaptiveMaxPool3d"])
def test_layer_signatures_match_torch(name):
    import inspect

    def params(cls):
        return [(p.name, p.default) for p in inspect.signature(cls).parameters.values()]

    assert params(getattr(kiln.nn, name)) == params(getattr(torch.nn, name))
