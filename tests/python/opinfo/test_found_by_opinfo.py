"""Regression cases for the disagreements the OpInfo test found, each against torch
(the OpInfo test covers them too, but in a subprocess over many ops; these fail on their own).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_fails_alike, assert_matches


def _pair(t: torch.Tensor, requires_grad: bool = False):
    k = kiln.from_numpy(t.detach().numpy().copy())
    if requires_grad:
        return k.requires_grad_(), t.detach().clone().requires_grad_()
    return k, t


def _ints(*shape):
    return torch.randint(-4, 5, shape, generator=torch.Generator().manual_seed(sum(shape)))


def _floats(*shape):
    return torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(sum(shape)))


# conv_transpose with output_padding >= stride (allowed when below the dilation), groups, unbatched.
CONV_TRANSPOSE_CASES = [
    ((2, 2, 4, 4), (2, 2, 4, 5), dict(stride=(3, 2), padding=(1, 2), output_padding=(2, 3), groups=2, dilation=(4, 4))),
    ((2, 4, 4), (2, 2, 4, 5), dict(stride=(3, 2), padding=(1, 2), output_padding=(2, 3), groups=2, dilation=(4, 4))),
    ((4, 4, 6), (4, 1, 3, 3), dict(stride=2, padding=1, output_padding=2, groups=4, dilation=3)),
]


@pytest.mark.parametrize("input_shape,weight_shape,options", CONV_TRANSPOSE_CASES)
def test_conv_transpose2d_output_padding_beyond_stride(input_shape, weight_shape, options):
    (kx, tx), (kw, tw) = _pair(_floats(*input_shape), True), _pair(_floats(*weight_shape), True)
    k = kiln.nn.functional.conv_transpose2d(kx, kw, **options)
    t = torch.nn.functional.conv_transpose2d(tx, tw, **options)
    assert_matches(k, t.detach())
    upstream = _floats(*t.shape)
    k.backward(kiln.from_numpy(upstream.numpy().copy()))
    t.backward(upstream)
    assert_matches(kx.grad, tx.grad)
    assert_matches(kw.grad, tw.grad)


@pytest.mark.parametrize("dims", [1, 2])
def test_conv_transpose_on_integers(dims):
    options = dict(stride=2, padding=1, output_padding=1)
    tx, tw = _ints(1, 2, *(4,) * dims), _ints(2, 3, *(3,) * dims)
    kfn = getattr(kiln.nn.functional, f"conv_transpose{dims}d")
    tfn = getattr(torch.nn.functional, f"conv_transpose{dims}d")
    assert_matches(kfn(_pair(tx)[0], _pair(tw)[0], **options), tfn(tx, tw, **options), exact=True)


@pytest.mark.parametrize("op", ["all", "any"])
@pytest.mark.parametrize("dim,keepdim", [((0, 1), False), ((1,), True), ((), False), (None, False), ([-1, 0], True)])
def test_all_any_over_a_tuple_of_dims(op, dim, keepdim):
    t = torch.tensor([[[1, 0], [1, 1]], [[0, 0], [1, 1]]], dtype=torch.uint8)
    for dtype in (torch.uint8, torch.bool, torch.float32):
        k = _pair(t.to(dtype))[0]
        assert_matches(getattr(kiln, op)(k, dim=dim, keepdim=keepdim),
                       getattr(torch, op)(t.to(dtype), dim=dim, keepdim=keepdim), exact=True)
        assert_matches(getattr(k, op)(dim, keepdim), getattr(t.to(dtype), op)(dim, keepdim), exact=True)
        kout, tout = kiln.empty(0, dtype=kiln.bool), torch.empty(0, dtype=torch.bool)
        getattr(kiln, op)(k, dim=dim, keepdim=keepdim, out=kout)
        assert_matches(kout, getattr(torch, op)(t.to(dtype), dim=dim, keepdim=keepdim, out=tout), exact=True)


@pytest.mark.parametrize("op", ["all", "any"])
def test_all_any_refuse_a_dim_out_of_range_in_a_tuple(op):
    with pytest.raises(IndexError, match="Dimension out of range"):
        getattr(kiln, op)(kiln.ones(2, 3), dim=(0, 2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        getattr(torch, op)(torch.ones(2, 3), dim=(0, 2))


@pytest.mark.parametrize("op,shapes", [("addmv", [(5,), (5, 3), (3,)]), ("addbmm", [(5, 4), (2, 5, 3), (2, 3, 4)]),
                                       ("baddbmm", [(2, 5, 4), (2, 5, 3), (2, 3, 4)])])
@pytest.mark.parametrize("beta,alpha", [(0.6, 0.2), (1.7, 2.9), (1, 1), (0, 3)])
def test_addmm_family_reads_float_scalars_as_integers_on_integer_tensors(op, shapes, beta, alpha):
    tensors = [_ints(*shape) for shape in shapes]
    k = getattr(kiln, op)(*[_pair(t)[0] for t in tensors], beta=beta, alpha=alpha)
    assert_matches(k, getattr(torch, op)(*tensors, beta=beta, alpha=alpha), exact=True)


@pytest.mark.parametrize("beta,alpha", [(1, 1), (3, 2), (0, 2), (1, 0), (True, False)])
def test_addr_on_bool_is_logical(beta, alpha):
    self_, vec1, vec2 = _ints(5, 4) > 0, _ints(5) > 0, _ints(4) > 0
    k = kiln.addr(*[_pair(t)[0] for t in (self_, vec1, vec2)], beta=beta, alpha=alpha)
    assert_matches(k, torch.addr(self_, vec1, vec2, beta=beta, alpha=alpha), exact=True)


def test_permute_copy_of_a_0d_tensor():
    t = torch.tensor(2.5)
    assert_matches(kiln.permute_copy(_pair(t)[0], ()), torch.permute_copy(t, ()), exact=True)


@pytest.mark.parametrize("index", [[0], []])
def test_index_copy_on_a_0d_tensor(index):
    t, source = torch.tensor(1.5), torch.tensor(-2.0) if index else torch.tensor([])
    idx = torch.tensor(index, dtype=torch.int64)
    k = kiln.index_copy(_pair(t)[0], 0, _pair(idx)[0], _pair(source)[0])
    assert_matches(k, torch.index_copy(t, 0, idx, source), exact=True)


def test_unique_along_a_dim_of_an_empty_tensor():
    t = torch.zeros(0, 3)
    for dim in (0, -2):  # torch refuses the dims of size 3 here (a 0-sized dim not selected)
        k = kiln.unique(_pair(t)[0], dim=dim, return_inverse=True, return_counts=True)
        for kv, tv in zip(k, torch.unique(t, dim=dim, return_inverse=True, return_counts=True)):
            assert_matches(kv, tv, exact=True)


@pytest.mark.parametrize("dtype", [torch.bool, torch.int64, torch.uint8])
def test_ndtr_of_integers_and_bools(dtype):
    t = torch.tensor([0, 1, 1, 0, 3]).to(dtype)
    assert_matches(kiln.special.ndtr(_pair(t)[0]), torch.special.ndtr(t))


@pytest.mark.parametrize("delta", [0.0, -1.0])
def test_huber_loss_refuses_a_non_positive_delta(delta):
    t = torch.ones(3)
    assert_fails_alike(lambda: kiln.nn.functional.huber_loss(_pair(t)[0], _pair(t)[0], delta=delta),
                       lambda: torch.nn.functional.huber_loss(t, t, delta=delta))


@pytest.mark.parametrize("margin", [0.0, -1.0])
def test_triplet_margin_loss_refuses_a_non_positive_margin(margin):
    t = torch.ones(2, 3)
    k = _pair(t)[0]
    assert_fails_alike(lambda: kiln.nn.functional.triplet_margin_loss(k, k, k, margin=margin),
                       lambda: torch.nn.functional.triplet_margin_loss(t, t, t, margin=margin))
    # torch.triplet_margin_loss (the aten op) takes any margin
    assert_matches(kiln.triplet_margin_loss(k, k, k, margin, 2.0, 1e-6, False, 1),
                   torch.triplet_margin_loss(t, t, t, margin, 2.0, 1e-6, False, 1))


@pytest.mark.parametrize("shapes,dim", [([(5, 3), (5, 1)], -1), ([(5, 2), (5, 2)], 2), ([(5, 1), (5, 3)], -1)])
def test_linalg_cross_checks_each_input_before_broadcasting(shapes, dim):
    a, b = _floats(*shapes[0]), _floats(*shapes[1])
    assert_fails_alike(lambda: kiln.linalg.cross(_pair(a)[0], _pair(b)[0], dim=dim),
                       lambda: torch.linalg.cross(a, b, dim=dim))


def test_regression_inputs_are_numpy_backed():
    """The pairs above copy through numpy: a kiln tensor never shares torch's memory."""
    t = torch.ones(2)
    k = _pair(t)[0]
    t.add_(1)
    assert np.array_equal(k.numpy(), np.ones(2, dtype=np.float32))


def test_poisson_nll_loss_full_with_zero_targets():
    """Stirling's term is masked where target <= 1, not multiplied by 0 (0 * log(0) is NaN)."""
    x, target = torch.tensor([[0.5, 1.0], [2.0, 0.1]]), torch.tensor([[0, 1], [3, 4]])
    k = kiln.nn.functional.poisson_nll_loss(_pair(x)[0], _pair(target)[0], log_input=False, full=True)
    assert_matches(k, torch.nn.functional.poisson_nll_loss(x, target, log_input=False, full=True))


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.float64])
def test_native_dropout_backward_of_integer_and_bool_gradients(dtype):
    """An integer or bool gradient times the float scale gives a float (torch.ops.aten.native_dropout_backward)."""
    grad, mask = torch.tensor([1, 2, 0, 3]).to(dtype), torch.tensor([True, False, True, True])
    k = kiln.native_dropout_backward(_pair(grad)[0], _pair(mask)[0], 2.5)
    assert_matches(k, torch.ops.aten.native_dropout_backward(grad, mask, 2.5))


@pytest.mark.parametrize("shape,size", [((), ()), ((3, 1), (3, 4)), ((1,), [2, -1])])
def test_expand_copy_with_any_size(shape, size):
    t = _floats(*shape) if shape else torch.tensor(1.5, dtype=torch.float64)
    assert_matches(kiln.expand_copy(_pair(t)[0], size), torch.expand_copy(t, size), exact=True)


@pytest.mark.parametrize("op", ["quantile", "nanquantile"])
@pytest.mark.parametrize("q", [0.3, torch.tensor([0.25, 0.5], dtype=torch.float64)])
@pytest.mark.parametrize("dim,keepdim", [(0, True), (-1, False), (None, True)])
def test_quantile_of_a_0d_tensor(op, q, dim, keepdim):
    t = torch.tensor(1.25, dtype=torch.float64)
    kq = _pair(q)[0] if isinstance(q, torch.Tensor) else q
    k = getattr(kiln, op)(_pair(t)[0], kq, dim=dim, keepdim=keepdim)
    assert_matches(k, getattr(torch, op)(t, q, dim=dim, keepdim=keepdim))


# --- issue 31 item 2, the rows fixed by the opinfo branch ------------------------------------------

def test_max_min_with_a_0d_integer_tensor_take_the_binary_overload():
    t, other = _ints(3, 4), torch.tensor(2)
    k, ko = _pair(t)[0], _pair(other)[0]
    assert_matches(kiln.max(k, ko), torch.max(t, other), exact=True)
    assert_matches(k.min(ko), t.min(other), exact=True)
    assert_matches(kiln.max(k, 1).values, torch.max(t, 1).values, exact=True)


def test_sum_to_size_of_a_0d_bool_gives_int64():
    t = torch.tensor(True)
    assert_matches(_pair(t)[0].sum_to_size(()), t.sum_to_size(()), exact=True)


@pytest.mark.parametrize("weights", [dict(fweights=torch.ones(5, 5)), dict(aweights=torch.ones(5, dtype=torch.int64)),
                                     dict(fweights=torch.ones(5)), dict(aweights=torch.ones(1)),
                                     dict(fweights=-torch.ones(5, dtype=torch.int64)), dict(aweights=-torch.ones(5))])
def test_cov_checks_its_weights(weights):
    x = _floats(5)
    assert_fails_alike(lambda: kiln.cov(_pair(x)[0], **{k: _pair(v)[0] for k, v in weights.items()}),
                       lambda: torch.cov(x, **weights))


@pytest.mark.parametrize("n", [-3, -1, 0, 2])
def test_matrix_power_of_negative_and_zero_powers_with_gradients(n):
    a = _floats(2, 3, 3) + 3 * torch.eye(3, dtype=torch.float64)
    (ka, ta) = _pair(a, True)
    k, t = kiln.linalg.matrix_power(ka, n), torch.linalg.matrix_power(ta, n)
    assert_matches(k, t.detach())
    assert k.requires_grad
    k.sum().backward()
    t.sum().backward()
    assert_matches(ka.grad, ta.grad)


def test_slogdet_sign_and_lstsq_residuals_require_grad_as_torch():
    (ka, ta), (kb, tb) = _pair(_floats(3, 3), True), _pair(_floats(3, 2), True)
    assert kiln.linalg.slogdet(ka).sign.requires_grad == torch.linalg.slogdet(ta).sign.requires_grad
    assert kiln.linalg.lstsq(ka, kb).residuals.requires_grad == torch.linalg.lstsq(ta, tb).residuals.requires_grad


def test_nextafter_and_index_fill_gradients():
    (kx, tx), (ky, ty) = _pair(_floats(4), True), _pair(_floats(4).flip(0), True)
    kiln.nextafter(kx, ky).sum().backward()
    torch.nextafter(tx, ty).sum().backward()
    assert_matches(kx.grad, tx.grad)
    assert_matches(ky.grad, ty.grad)
    (ks, ts), (kv, tv) = _pair(_floats(3, 4), True), _pair(torch.tensor(2.0, dtype=torch.float64), True)
    index = torch.tensor([1, 1, 3])  # a duplicate index fills the same element once
    upstream = _floats(3, 4).flip(1)
    kiln.index_fill(ks, 1, _pair(index)[0], kv).backward(_pair(upstream)[0])
    torch.index_fill(ts, 1, index, tv).backward(upstream)
    assert_matches(kv.grad, tv.grad)
    assert_matches(ks.grad, ts.grad)


def test_cumprod_gradient_with_zeros():
    x = _floats(3, 6)
    x[0, 2] = 0
    x[1, 1] = x[1, 4] = 0  # two zeros in a row: only the first gets a gradient
    (kx, tx) = _pair(x, True)
    upstream = _floats(3, 6).flip(0)
    kiln.cumprod(kx, 1).backward(_pair(upstream)[0])
    torch.cumprod(tx, 1).backward(upstream)
    assert_matches(kx.grad, tx.grad)


def test_prelu_checks_weight_rank_and_keeps_a_0d_input_0d():
    x, w = _floats(1).reshape(()), torch.tensor([0.25], dtype=torch.float64)
    assert_matches(kiln.nn.functional.prelu(_pair(x)[0], _pair(w)[0]), torch.nn.functional.prelu(x, w))
    w2 = torch.ones(1, 1, dtype=torch.float64)
    assert_fails_alike(lambda: kiln.nn.functional.prelu(_pair(_floats(2, 1))[0], _pair(w2)[0]),
                       lambda: torch.nn.functional.prelu(_floats(2, 1), w2))


def test_empty_reductions_and_norms_fail_or_return_as_torch():
    empty = torch.zeros(2, 0, dtype=torch.float64)
    k = _pair(empty)[0]
    assert_fails_alike(lambda: kiln.amax(k), lambda: torch.amax(empty))
    assert_fails_alike(lambda: kiln.amin(k), lambda: torch.amin(empty))
    assert_fails_alike(lambda: kiln.linalg.vector_norm(k, float("inf"), dim=-1),
                       lambda: torch.linalg.vector_norm(empty, float("inf"), dim=-1))
    for ord in (1, float("inf"), 2, "nuc"):
        assert_matches(kiln.linalg.matrix_norm(k, ord), torch.linalg.matrix_norm(empty, ord))


def test_kthvalue_out_and_its_overlap_check():
    t = _floats(10)
    kv, kix = kiln.empty(0, dtype=kiln.float64), kiln.empty(0, dtype=kiln.int64)
    kiln.kthvalue(_pair(t)[0], 3, out=(kv, kix))
    assert_matches(kv, torch.kthvalue(t, 3).values)
    k = _pair(t)[0]
    assert_fails_alike(lambda: kiln.kthvalue(k, 5, out=(k, kix)),
                       lambda: torch.kthvalue(t, 5, out=(t, torch.empty(0, dtype=torch.int64))))


def test_error_wordings_match_torch():
    F, tF = kiln.nn.functional, torch.nn.functional
    zero_d = torch.tensor(1.0)
    assert_fails_alike(lambda: kiln.fft.fft(_pair(zero_d)[0]), lambda: torch.fft.fft(zero_d))
    assert_fails_alike(lambda: kiln.fft.rfft2(_pair(zero_d)[0]), lambda: torch.fft.rfft2(zero_d))
    x = torch.ones(2, 2, dtype=torch.float64)
    assert_fails_alike(lambda: F.adaptive_avg_pool2d(_pair(x)[0], (1, 1)), lambda: tF.adaptive_avg_pool2d(x, (1, 1)))
    assert_fails_alike(lambda: F.adaptive_max_pool3d(_pair(x)[0], (1, 1, 1)),
                       lambda: tF.adaptive_max_pool3d(x, (1, 1, 1)))
    assert_fails_alike(lambda: F.max_pool1d(_pair(zero_d)[0], 1), lambda: tF.max_pool1d(zero_d, 1))
    t = torch.ones(10, 5, 20)
    assert_fails_alike(lambda: kiln.narrow_copy(_pair(t)[0], 3, 0, 0), lambda: torch.narrow_copy(t, 3, 0, 0),
                       message=False)  # torch's text adds a request to report a better message
    assert_fails_alike(lambda: kiln.narrow_copy(_pair(t)[0], 0, 0, -1), lambda: torch.narrow_copy(t, 0, 0, -1))
    a, b = torch.ones(3), torch.ones(3)
    assert_fails_alike(lambda: F.gaussian_nll_loss(_pair(a)[0], _pair(b)[0], _pair(b)[0], reduction="abc"),
                       lambda: tF.gaussian_nll_loss(a, b, b, reduction="abc"))


def test_embedding_max_norm_renormalises_the_rows_it_reads():
    weight, index = _floats(6, 3) * 3, torch.tensor([[0, 2, 2], [5, 1, 0]])
    kw, tw = _pair(weight.clone())[0], weight.clone()
    k = kiln.nn.functional.embedding(_pair(index)[0], kw, max_norm=1.5)
    t = torch.nn.functional.embedding(index, tw, max_norm=1.5)
    assert_matches(k, t)
    assert_matches(kw, tw)  # renormalised in place, row 3 and 4 untouched


@pytest.mark.parametrize("options", [dict(kernel_size=2), dict(kernel_size=2, padding=1, count_include_pad=False),
                                     dict(kernel_size=(2, 1, 2), stride=1, divisor_override=3),
                                     dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)])
def test_avg_pool3d_of_integers_truncates_as_torch(options):
    x = torch.randint(-50, 50, (2, 3, 5, 4, 6), generator=torch.Generator().manual_seed(1))
    assert_matches(kiln.nn.functional.avg_pool3d(_pair(x)[0], **options),
                   torch.nn.functional.avg_pool3d(x, **options), exact=True)


def test_pinv_gradient_of_a_singular_matrix():
    a = _floats(4, 2) @ _floats(2, 5)  # rank 2 of 4: the SVD's backward would divide by equal (zero) values
    (ka, ta) = _pair(a, True)
    upstream = _floats(5, 4)
    kiln.linalg.pinv(ka).backward(_pair(upstream)[0])
    torch.linalg.pinv(ta).backward(upstream)
    assert_matches(ka.grad, ta.grad)


def test_complex_checks_both_parts_and_out_as_torch():
    f, i = torch.ones(2), torch.ones(2, dtype=torch.int32)
    assert_fails_alike(lambda: kiln.complex(_pair(f)[0], _pair(i)[0]), lambda: torch.complex(f, i))
    d, out = torch.ones(2, dtype=torch.float64), torch.empty(2, dtype=torch.complex64)
    assert_fails_alike(lambda: kiln.complex(_pair(d)[0], _pair(d)[0], out=kiln.empty(2, dtype=kiln.complex64)),
                       lambda: torch.complex(d, d, out=out))


def test_arange_of_int64_with_a_step_truncated_to_zero_is_a_value_error():
    assert_fails_alike(lambda: kiln.arange(0, 5, 0.5, dtype=kiln.int64), lambda: torch.arange(0, 5, 0.5, dtype=torch.int64))


# --- linspace/logspace with tensor bounds, arange's out= ------------------------------------------

@pytest.mark.parametrize("name", ["linspace", "logspace"])
@pytest.mark.parametrize("bounds", ["tensor_tensor", "tensor_scalar", "scalar_tensor"])
def test_range_with_zero_dim_tensor_bounds(name, bounds):
    start, end = (torch.tensor(-2.5), torch.tensor(3)) if bounds != "scalar_tensor" else (-2.5, torch.tensor(3))
    end = 3 if bounds == "tensor_scalar" else end
    kstart = _pair(start)[0] if isinstance(start, torch.Tensor) else start
    kend = _pair(end)[0] if isinstance(end, torch.Tensor) else end
    for kwargs in (dict(), dict(dtype=torch.float64), dict(dtype=torch.int64)):
        kkwargs = {key: getattr(kiln, str(value).removeprefix("torch.")) for key, value in kwargs.items()}
        assert_matches(getattr(kiln, name)(kstart, kend, 7, **kkwargs), getattr(torch, name)(start, end, 7, **kwargs),
                       exact=True)
    assert_matches(kiln.logspace(kstart, kend, 5, base=2), torch.logspace(start, end, 5, base=2), exact=True)


@pytest.mark.parametrize("name", ["linspace", "logspace"])
def test_range_bounds_of_another_rank_and_float_steps_fail_as_torch(name):
    k, t = getattr(kiln, name), getattr(torch, name)
    one = torch.tensor([1, 1])
    kone = _pair(one)[0]
    assert_fails_alike(lambda: k(kone, _pair(one)[0], 1), lambda: t(one, one.clone(), 1))
    assert_fails_alike(lambda: k(kone, 3, 2), lambda: t(one, 3, 2))
    assert_fails_alike(lambda: k(0, kone, 2), lambda: t(0, one, 2))
    # a float steps matches no overload: a TypeError (torch's list of overloads also has the out= forms)
    assert_fails_alike(lambda: k(0, 3, 1.0), lambda: t(0, 3, 1.0), message=False)
    tensor_start = torch.tensor(1.0, requires_grad=True)
    assert not k(_pair(tensor_start, True)[0], 3, 4).requires_grad  # the bounds are read as numbers, as torch


@pytest.mark.parametrize("args", [(5,), (0, 5, 1.5), (0.5, 5, 1), (0, 5.5, 2), (-3, 3, 0.75)])
@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "float64"])
def test_arange_out_takes_out_dtype(args, dtype):
    kout, tout = kiln.empty(0, dtype=getattr(kiln, dtype)), torch.empty(0, dtype=getattr(torch, dtype))
    try:
        torch.arange(*args, out=tout)
    except ValueError:  # a step truncated to 0 in an integer out (-3, 3, 0.75)
        assert_fails_alike(lambda: kiln.arange(*args, out=kout), lambda: torch.arange(*args, out=tout))
        return
    result = kiln.arange(*args, out=kout)
    assert result is kout
    assert_matches(kout, tout, exact=True)


def test_arange_out_keeps_a_shape_of_as_many_elements_and_refuses_a_zero_int_step():
    kout, tout = kiln.empty(2, 3), torch.empty(2, 3)
    kiln.arange(6, out=kout)
    torch.arange(6, out=tout)
    assert_matches(kout, tout, exact=True)
    assert_fails_alike(lambda: kiln.arange(0, 64, 0.5, out=kiln.empty(0, dtype=kiln.int64)),
                       lambda: torch.arange(0, 64, 0.5, out=torch.empty(0, dtype=torch.int64)))


# --- argument checks worded as torch's ----------------------------------------------------------

CONV_ARGUMENT_ERRORS = [
    ("conv1d", (1, 1, 4), (1, 1, 2), dict(dilation=-1)),
    ("conv1d", (1, 1, 4), (1, 1, 2), dict(dilation=0)),
    ("conv2d", (1, 1, 4, 4), (1, 1, 2, 2), dict(dilation=(1, 0))),
    ("conv2d", (1, 1, 4, 4), (1, 1, 2, 2), dict(dilation=-1, padding="same")),
    ("conv2d", (1, 1, 4, 4), (1, 1, 2, 2), dict(dilation=0, padding="same")),
    ("conv3d", (1, 1, 4, 4, 4), (1, 1, 2, 2, 2), dict(dilation=-1)),
    ("conv3d", (1, 1, 4, 4, 4), (1, 1, 2, 2, 2), dict(dilation=0, padding="same")),
    ("conv3d", (1, 1, 4, 4, 4), (1, 1, 2, 2, 2), dict(dilation=-1, padding="same")),
    ("conv1d", (1, 1, 4), (1, 2), dict()),
    ("conv1d", (1, 1, 4), (1, 2), dict(padding="same")),
    ("conv2d", (1, 1, 4, 4), (1, 2), dict()),
    ("conv3d", (1, 1, 4, 4, 4), (1, 2), dict()),
    ("conv2d", (1, 1, 4, 3), (1, 2, 2), dict(padding="same")),
    ("conv1d", (1, 1, 4), (1, 1, 2, 2), dict(padding="same")),
    ("conv3d", (1, 1, 3, 4, 5), (1, 1, 4, 3), dict(padding="same")),
    ("conv3d", (1, 1, 3, 4, 5), (1, 1, 4, 3), dict()),
]


@pytest.mark.parametrize("name,input_shape,weight_shape,options", CONV_ARGUMENT_ERRORS)
def test_conv_dilation_and_weight_rank_errors_as_torch(name, input_shape, weight_shape, options):
    # float64, as the OpInfo's error inputs: torch words a zero dilation by backend, and float64 never takes oneDNN
    x, w = torch.ones(input_shape, dtype=torch.float64), torch.ones(weight_shape, dtype=torch.float64)
    assert_fails_alike(lambda: getattr(kiln.nn.functional, name)(_pair(x)[0], _pair(w)[0], **options),
                       lambda: getattr(torch.nn.functional, name)(x, w, **options))


@pytest.mark.parametrize("options", [dict(kernel_size=2, stride=0), dict(kernel_size=2, dilation=0),
                                     dict(kernel_size=2, dilation=3), dict(kernel_size=3, stride=[0], padding=1)])
def test_max_pool1d_errors_as_torch(options):
    x = torch.ones(2, 1, 2)
    assert_fails_alike(lambda: kiln.nn.functional.max_pool1d(_pair(x)[0], **options),
                       lambda: torch.nn.functional.max_pool1d(x, **options))


@pytest.mark.parametrize("name", ["scatter", "scatter_add"])
def test_scatter_checks_the_rank_of_src(name):
    dst, index, src = torch.zeros(3, 5), torch.tensor([[0, 1], [1, 2]]), torch.ones(2, 5, 2)
    assert_fails_alike(lambda: getattr(kiln, name)(_pair(dst)[0], 0, _pair(index)[0], _pair(src)[0]),
                       lambda: getattr(torch, name)(dst, 0, index, src))


def test_masked_fill_of_an_int_tensor_with_a_complex_tensor_value():
    x, mask = torch.ones(2, dtype=torch.long), torch.tensor(True)
    assert_fails_alike(lambda: _pair(x)[0].masked_fill(_pair(mask)[0], kiln.tensor(1j)),
                       lambda: x.masked_fill(mask, torch.tensor(1j)))
    z = torch.ones(2, dtype=torch.complex64)
    assert_matches(kiln.ones(2, dtype=kiln.complex64).masked_fill(_pair(mask)[0], kiln.tensor(2 - 1j)),
                   z.masked_fill(mask, torch.tensor(2 - 1j)), exact=True)


def test_out_aliasing_an_input_is_refused_as_torch():
    src, index = torch.rand(6), torch.tensor([2, 1, 0])
    ksrc, kindex = _pair(src)[0], _pair(index)[0]
    expanded = torch.rand(1).expand(3)
    kexpanded = kiln.rand(1).expand(3)
    assert_fails_alike(lambda: kiln.take(ksrc, kindex, out=kexpanded), lambda: torch.take(src, index, out=expanded))
    assert_fails_alike(lambda: kiln.take(ksrc, kindex, out=ksrc), lambda: torch.take(src, index, out=src))
    assert_fails_alike(lambda: kiln.take(kindex.clone(), kindex[1:], out=kindex[:-1]),
                       lambda: torch.take(index.clone(), index[1:], out=index[:-1]))
    assert_fails_alike(lambda: kiln.gather(ksrc, 0, kindex, out=kexpanded),
                       lambda: torch.gather(src, 0, index, out=expanded))
    assert_fails_alike(lambda: kiln.gather(ksrc, 0, kindex, out=ksrc), lambda: torch.gather(src, 0, index, out=src))
    with pytest.warns(UserWarning):  # out grows from 1 to 2 elements (torch warns alike), meeting the index
        assert_fails_alike(lambda: kiln.gather(kindex.clone(), 0, kindex[1:], out=kindex[:1]),
                           lambda: torch.gather(index.clone(), 0, index[1:], out=index[:1]))
    mask = torch.tensor([True, False, True, True, False, False])
    kmask = _pair(mask)[0]
    assert_fails_alike(lambda: kiln.masked_select(ksrc, kmask, out=ksrc),
                       lambda: torch.masked_select(src, mask, out=src))
    assert_fails_alike(lambda: kiln.masked_select(kmask.clone(), kmask, out=kmask),
                       lambda: torch.masked_select(mask.clone(), mask, out=mask))


def test_diff_of_order_zero_is_a_copy_without_prepend_and_append():
    x, before, after = _floats(5, 5), _floats(1, 5), _floats(2, 5)
    (kx, tx) = _pair(x, True)
    k = kiln.diff(kx, 0, 0, _pair(before)[0], _pair(after)[0])
    t = torch.diff(tx, 0, 0, before, after)
    assert_matches(k, t.detach())
    k.sum().backward()
    t.sum().backward()
    assert_matches(kx.grad, tx.grad)
    assert_matches(kiln.diff(kx, 1, 0, _pair(before)[0], _pair(after)[0]), torch.diff(tx, 1, 0, before, after).detach())


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 6, 3, 4), (1, 4, 2, 3, 2)])
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
def test_local_response_norm_averages_as_torch(shape, dtype):
    g = torch.Generator().manual_seed(len(shape))
    x = torch.randint(-9, 10, shape, generator=g) if dtype == "int64" else torch.randn(shape, generator=g,
                                                                                       dtype=getattr(torch, dtype))
    for size in (1, 2, 3, 5):
        options = dict(alpha=0.1, beta=0.75, k=2.0)
        assert_matches(kiln.nn.functional.local_response_norm(_pair(x)[0], size, **options),
                       torch.nn.functional.local_response_norm(x, size, **options))


# --- cat of an empty list, native_group_norm's statistics, numbers beside float16 ---------------

@pytest.mark.parametrize("op", ["cat", "concat", "concatenate"])
def test_cat_of_an_empty_list_fails_with_cats_value_error(op):
    assert_fails_alike(lambda: getattr(kiln, op)([], dim=1), lambda: getattr(torch, op)([], dim=1))
    kout, tout = kiln.empty(2), torch.empty(2)
    assert_fails_alike(lambda: kiln.cat([], out=kout), lambda: torch.cat([], out=tout))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("outputs", [(0, 1, 2), (1, 2)])
def test_native_group_norm_gradients_through_mean_and_rstd(weighted, outputs):
    # Note [Gradients through group_norm's statistics] (eager/autograd/NormFormulas.h): the OpInfo case gives
    # every output a gradient. (torch adds the statistics' part only when both mean and rstd have one.)
    kx, tx = _pair(_floats(2, 6, 5), True)
    kw, tw = _pair(_floats(6) + 1.5, True) if weighted else (None, None)
    kb, tb = _pair(_floats(6) - 0.5, True) if weighted else (None, None)
    k = kiln.native_group_norm(kx, kw, kb, 2, 6, 5, 3, 1e-5)
    t = torch.native_group_norm(tx, tw, tb, 2, 6, 5, 3, 1e-5)
    upstream = [_floats(*t[i].shape) * (i + 1) for i in outputs]
    wanted = 0 in outputs and weighted
    kgrads = kiln.autograd.grad([k[i] for i in outputs], [kx, kw, kb] if wanted else [kx],
                                [_pair(u)[0] for u in upstream])
    tgrads = torch.autograd.grad([t[i] for i in outputs], [tx, tw, tb] if wanted else [tx], upstream)
    for kg, tg in zip(kgrads, tgrads):
        assert_matches(kg, tg)


NUMBER_OPERATIONS = {
    "mul": lambda x, s: x * s,
    "rmul": lambda x, s: s * x,
    "div": lambda x, s: x / s,
    "rdiv": lambda x, s: s / x,
    "floordiv": lambda x, s: x // s,
    "div_trunc": lambda x, s: x.div(s, rounding_mode="trunc"),
    "add": lambda x, s: x + s,
    "rsub": lambda x, s: s - x,
    "remainder": lambda x, s: x % s,
    "mul_": lambda x, s: x.clone().mul_(s),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("name", list(NUMBER_OPERATIONS))
def test_a_python_number_beside_a_reduced_float_tensor_as_torch(dtype, name):
    # float16 x * 1.1 multiplies by float(1.1), not float16(1.1) (Note [CPU scalars at opmath precision]);
    # number / x is reciprocal(x) * number, as torch's Tensor.__rdiv__.
    t = (torch.randn(2000, generator=torch.Generator().manual_seed(3)) * 4).to(getattr(torch, dtype))
    k = kiln.from_numpy(t.float().numpy()).to(getattr(kiln, dtype))
    fn = NUMBER_OPERATIONS[name]
    for number in (1.1, 0.3, 3.7, 70000.0, 3, 100001):
        assert_matches(fn(k, number), fn(t, number), exact=True)


def test_factories_take_layout_strided_as_torch():
    # Note [Parser hooks] (python/csrc/PythonArgParser.cpp): kiln.strided is kiln's one layout.
    assert_matches(kiln.zeros(2, 3, layout=kiln.strided), torch.zeros(2, 3, layout=torch.strided), exact=True)
    k = kiln.normal(0.5, 2.0, size=(4,), layout=kiln.strided)
    assert tuple(k.shape) == (4,) and k.dtype is kiln.float32
    assert kiln.empty_like(kiln.ones(3), layout=kiln.strided).shape == (3,)
    with pytest.raises(TypeError, match="must be kiln.layout"):
        kiln.zeros(2, layout="strided")


# --- svd's gradient with only the singular values used ------------------------------------------


@pytest.mark.parametrize("matrix,use", [
    *[(matrix, use) for matrix in ("zeros", "identity", "random")
      for use in ("svdvals", "matrix_2_norm", "svd_S_only", "complex_svdvals")],
    ("rank_one", "matrix_2_norm"),  # its zero singular values' vectors are any basis: only the largest is defined
])
def test_singular_value_gradients_with_repeated_or_zero_values(matrix, use):
    # linalg.norm.subgradients_at_zero: U diag(gS) Vh needs no gaps between singular values (torch's
    # svd_backward shortcut); kiln's full formula gave NaN from 0 / 0 on repeated or zero values.
    shape = (2, 3, 4)
    a = {"zeros": torch.zeros(shape, dtype=torch.float64),
         "identity": torch.eye(3, 4, dtype=torch.float64).expand(shape).clone(),
         "rank_one": torch.ones(shape, dtype=torch.float64),
         "random": _floats(*shape)}[matrix]
    if use == "complex_svdvals":
        a = torch.complex(a, a * 0.5)
    kx, tx = _pair(a, True)

    def run(lib, x):
        if use in ("svdvals", "complex_svdvals"):
            return lib.linalg.svdvals(x)
        if use == "matrix_2_norm":
            return lib.linalg.matrix_norm(x, ord=2)
        return lib.linalg.svd(x, full_matrices=True)[1]

    k, t = run(kiln, kx), run(torch, tx)
    upstream = _floats(*t.shape)
    (kg,) = kiln.autograd.grad(k, kx, _pair(upstream)[0])
    (tg,) = torch.autograd.grad(t, tx, upstream)
    assert_matches(kg, tg)
