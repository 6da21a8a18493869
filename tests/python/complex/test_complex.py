"""Complex tensors (complex64, complex128) against torch: dtypes and promotion, creation,
printing, the real/complex views, arithmetic, reductions, magnitude and phase, gradients
(the rotary-embedding pattern among them), and the errors for what is not supported yet."""

import itertools

import numpy as np
import pytest
import torch

import kiln
from complex_compare import assert_close as _close, seeded_randn as _rand
from torch_compare import to_kiln as _k

COMPLEX = [(kiln.complex64, torch.complex64), (kiln.complex128, torch.complex128)]
REAL_AND_COMPLEX = [
    (kiln.float32, torch.float32), (kiln.float64, torch.float64), (kiln.float16, torch.float16),
    (kiln.bfloat16, torch.bfloat16), (kiln.int8, torch.int8), (kiln.int16, torch.int16), (kiln.int32, torch.int32),
    (kiln.int64, torch.int64), (kiln.uint8, torch.uint8), (kiln.bool, torch.bool)] + COMPLEX


# --- dtypes and promotion ---------------------------------------------------------------------

def test_dtype_objects_match_torch():
    for k, t in COMPLEX:
        assert k.is_complex and not k.is_floating_point and k.is_signed
        assert k.itemsize == t.itemsize
        assert repr(k) == repr(t).replace("torch", "kiln")
    assert kiln.cfloat is kiln.complex64 and kiln.cdouble is kiln.complex128
    assert not kiln.float32.is_complex


@pytest.mark.parametrize("a,b", list(itertools.product(REAL_AND_COMPLEX, repeat=2)))
def test_promote_types_matches_torch(a, b):
    result = kiln.promote_types(a[0], b[0])
    assert str(result).removeprefix("kiln.") == str(torch.promote_types(a[1], b[1])).removeprefix("torch.")


@pytest.mark.parametrize("tensor_dtype,scalar_dtype", [
    (torch.float32, torch.complex128), (torch.float64, torch.complex64), (torch.int64, torch.complex64),
    (torch.float16, torch.complex64), (torch.complex64, torch.float64), (torch.complex64, torch.complex128)])
def test_zero_dim_complex_operand_keeps_the_tensors_precision(tensor_dtype, scalar_dtype):
    t = torch.ones(3, dtype=tensor_dtype)
    s = torch.tensor(2 + 1j, dtype=scalar_dtype) if scalar_dtype.is_complex else torch.tensor(2.0, dtype=scalar_dtype)
    expected = (t * s).dtype
    if expected == torch.complex32:
        expected = torch.complex64  # kiln has no complex32: float16 with complex computes in complex64
    got = (kiln.ones(3, dtype=getattr(kiln, str(tensor_dtype).removeprefix("torch."))) * _k(s)).dtype
    assert str(got).removeprefix("kiln.") == str(expected).removeprefix("torch.")


# --- creation, conversion, printing ---------------------------------------------------------

def test_tensor_from_python_complex_numbers():
    data = [[1 + 2j, 3.5], [-4j, 2]]
    for kwargs in ({}, {"dtype": "complex128"}):
        k = kiln.tensor(data, **{n: getattr(kiln, v) for n, v in kwargs.items()})
        t = torch.tensor(data, **{n: getattr(torch, v) for n, v in kwargs.items()})
        _close(k, t)
    assert kiln.tensor(2 - 3j).item() == torch.tensor(2 - 3j).item()
    assert kiln.tensor([1 + 1j, 2]).tolist() == torch.tensor([1 + 1j, 2]).tolist()


def test_numpy_round_trip_shares_memory():
    array = np.array([1 + 2j, 3 - 4j], dtype=np.complex128)
    k = kiln.from_numpy(array)
    assert k.dtype is kiln.complex128
    array[0] = 7 + 7j
    assert k[0].item() == 7 + 7j
    assert k.numpy().dtype == np.complex128


def test_factories_and_conversions():
    for k_dtype, t_dtype in COMPLEX:
        _close(kiln.zeros(2, 3, dtype=k_dtype), torch.zeros(2, 3, dtype=t_dtype))
        _close(kiln.ones(4, dtype=k_dtype), torch.ones(4, dtype=t_dtype))
        _close(kiln.full((2,), 2.5, dtype=k_dtype), torch.full((2,), 2.5, dtype=t_dtype))
    _close(kiln.ones(2) * kiln.tensor(1j), torch.ones(2) * 1j)
    _close(kiln.ones(2, dtype=kiln.float64) + kiln.tensor(1j), torch.ones(2, dtype=torch.float64) + 1j)
    _close(kiln.full((2,), 1 + 1j), torch.full((2,), 1 + 1j))
    x = torch.tensor([1.5, -2.0, 3.0])
    _close(_k(x).to(kiln.complex64), x.to(torch.complex64))
    z = _rand((5,), torch.complex128)
    _close(_k(z).to(kiln.complex64), z.to(torch.complex64))
    with pytest.warns(UserWarning):
        torch_real = z.to(torch.float32)
    _close(_k(z).to(kiln.float32), torch_real)  # the real part, as torch (which warns)
    _close(_k(z).to(kiln.bool), z.to(torch.bool))


@pytest.mark.parametrize("data", [[1 + 2j, -3.25 - 0.5j], [[0j, 1e-8 + 1e8j]], [2.0 + 0j], [-1j, 1j]])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_repr_matches_torch(data, dtype):
    k = kiln.tensor(data, dtype=getattr(kiln, dtype))
    t = torch.tensor(data, dtype=getattr(torch, dtype))
    assert repr(k) == repr(t).replace("torch.", "kiln.")


# --- views ---------------------------------------------------------------------------------------

def test_view_as_real_shares_memory_and_geometry():
    t = _rand((3, 4))[:, ::2]
    k = _k(_rand((3, 4)))[:, ::2]
    kr, tr = kiln.view_as_real(k), torch.view_as_real(t)
    assert tuple(kr.shape) == tuple(tr.shape) and kr.stride() == tr.stride()
    assert kr.storage_offset() == tr.storage_offset()
    kr[0, 0, 1] = 9.0
    assert k[0, 0].item() == complex(kr[0, 0, 0].item(), 9.0)


def test_view_as_complex_round_trip_and_offsets():
    t = torch.randn(4, 6, 2)
    k = _k(t)
    _close(kiln.view_as_complex(k), torch.view_as_complex(t))
    _close(kiln.view_as_complex(k[1:]), torch.view_as_complex(t[1:]))
    _close(kiln.view_as_real(kiln.view_as_complex(k)), t)


@pytest.mark.parametrize("make", [
    lambda m: m.randn(4, 3),                    # last dim not 2
    lambda m: m.randn(2, 4).t(),                # last dim stride not 1
    lambda m: m.randn(3, 3)[:, :2],             # an odd stride
    lambda m: m.randn(7)[1:].reshape(3, 2),     # an odd storage offset
    lambda m: m.randn(3, 2).to(m.int64),        # not float/double
    lambda m: m.tensor(1.0),                    # 0-d
])
def test_view_as_complex_errors_match_torch(make):
    with pytest.raises(RuntimeError) as expected:
        torch.view_as_complex(make(torch))
    with pytest.raises(RuntimeError) as got:
        kiln.view_as_complex(make(kiln))
    assert str(got.value) == str(expected.value)


def test_view_as_real_of_a_real_tensor_is_torchs_error():
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex tensors"):
        kiln.view_as_real(kiln.ones(2))


def test_real_and_imag_are_views_with_setters():
    t = _rand((2, 3))
    k = _k(t)
    _close(k.real, t.real)
    _close(k.imag, t.imag)
    _close(kiln.real(k), torch.real(t))
    _close(kiln.imag(k), torch.imag(t))
    k.imag = kiln.zeros(2, 3)
    t.imag = torch.zeros(2, 3)
    _close(k, t)
    k.real[0, 0] = 5.0
    t.real[0, 0] = 5.0
    _close(k, t)
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        kiln.ones(2).imag


# --- arithmetic and reductions ---------------------------------------------------------------

@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("other_kind", ["complex", "real", "python_float", "python_complex", "broadcast"])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_binary_arithmetic_matches_torch(op, other_kind, dtype):
    a = _rand((4, 5), dtype, seed=1)
    if other_kind == "complex":
        b = _rand((4, 5), dtype, seed=2)
    elif other_kind == "real":
        b = torch.randn(4, 5, dtype=torch.float32)
    elif other_kind == "broadcast":
        b = _rand((5,), dtype, seed=3)
    elif other_kind == "python_float":
        b = 2.5
    else:
        b = 1.5 - 2j
    kb = _k(b) if isinstance(b, torch.Tensor) else b
    _close(getattr(kiln, op)(_k(a), kb), getattr(torch, op)(a, b), rtol=1e-5)
    if isinstance(b, torch.Tensor):
        _close(getattr(kiln, op)(kb, _k(a)), getattr(torch, op)(b, a), rtol=1e-5)


def test_neg_conj_and_in_place_ops():
    t = _rand((3, 2))
    k = _k(t)
    _close(-k, -t)
    _close(k.conj(), t.conj())
    _close(kiln.conj_physical(k), torch.conj_physical(t))
    k2, t2 = k.clone(), t.clone()
    k2.conj_physical_()
    t2.conj_physical_()
    _close(k2, t2)
    k2.add_(k)
    t2.add_(t)
    _close(k2, t2)
    k2.mul_(k)
    t2.mul_(t)
    _close(k2, t2)


@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), ((0, 2), False), (-1, True)])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_sum_matches_torch(dim, keepdim, dtype):
    t = _rand((3, 4, 5), dtype)
    k = _k(t)
    if dim is None:
        _close(k.sum(), t.sum(), rtol=1e-5, atol=1e-5)
    else:
        _close(k.sum(dim, keepdim=keepdim), t.sum(dim, keepdim=keepdim), rtol=1e-5, atol=1e-5)
    _close(_k(t[0, 0, 0]).sum(), t[0, 0, 0].sum())


def test_abs_angle_sgn_isreal_match_torch():
    t = torch.tensor([3 + 4j, -1j, 0j, -2 + 0j, 1e-3 - 5j], dtype=torch.complex64)
    k = _k(t)
    for name in ("abs", "angle", "sgn", "isreal"):
        _close(getattr(kiln, name)(k), getattr(torch, name)(t))
        _close(getattr(k, name)(), getattr(t, name)())
    _close(abs(k), abs(t))


def test_abs_in_place_of_a_complex_tensor_is_torchs_error():
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex tensors."):
        kiln.ones(2, dtype=kiln.complex64).abs_()


def test_gradient_of_sgn_matches_torch():
    z = torch.tensor([3 + 4j, -1j, 0j, 1e-3 - 5j], dtype=torch.complex128)
    kz, tz = _both(z)
    weights = torch.tensor([1 + 2j, -3j, 2.0, 0.5 + 0.5j], dtype=torch.complex128)
    kiln.view_as_real(kiln.sgn(kz) * _k(weights)).sum().backward()
    torch.view_as_real(torch.sgn(tz) * weights).sum().backward()
    _close(kz.grad, tz.grad, rtol=1e-10, atol=1e-12)


def test_polar_and_complex_match_torch():
    r, theta = torch.rand(4, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    _close(kiln.polar(_k(r), _k(theta)), torch.polar(r, theta))
    re, im = torch.randn(3, 1), torch.randn(4)
    _close(kiln.complex(_k(re), _k(im)), torch.complex(re, im))
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float but got scalar type Double"):
        kiln.complex(kiln.ones(2), kiln.ones(2, dtype=kiln.float64))


# --- gradients --------------------------------------------------------------------------------

def _both(t):
    k = _k(t).requires_grad_()
    return k, t.clone().requires_grad_()


def test_gradients_of_products_and_quotients_match_torch():
    a, b = _rand((3, 4), seed=4), _rand((3, 4), seed=5)
    ka, ta = _both(a)
    kb, tb = _both(b)
    for kfn, tfn in ((lambda x, y: x * y, lambda x, y: x * y), (lambda x, y: x / y, lambda x, y: x / y),
                     (lambda x, y: (x + y) * x.conj() - y, lambda x, y: (x + y) * x.conj() - y)):
        kout, tout = kfn(ka, kb), tfn(ta, tb)
        kiln.view_as_real(kout).pow(2).sum().backward()
        torch.view_as_real(tout).pow(2).sum().backward()
        _close(ka.grad, ta.grad, rtol=1e-4, atol=1e-5)
        _close(kb.grad, tb.grad, rtol=1e-4, atol=1e-5)
        ka.grad = kb.grad = ta.grad = tb.grad = None


def test_gradients_of_abs_angle_and_parts_match_torch():
    z = _rand((6,), torch.complex128, seed=6)
    kz, tz = _both(z)
    (kiln.abs(kz).sum() + kiln.angle(kz).sum() + kz.real.sum() * 2 + (kz.imag ** 2).sum()).backward()
    (torch.abs(tz).sum() + torch.angle(tz).sum() + tz.real.sum() * 2 + (tz.imag ** 2).sum()).backward()
    _close(kz.grad, tz.grad, rtol=1e-10, atol=1e-12)


def test_rotary_embedding_pattern_values_and_gradients_match_torch():
    """The LLaMA reference code's rotary embedding: polar frequencies, view_as_complex of
    pairs, a broadcast complex product, view_as_real and flatten."""
    def rope(m, xq, freqs):
        freqs_cis = m.polar(m.ones_like(freqs), freqs)
        xq_ = m.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        return m.view_as_real(xq_ * freqs_cis.reshape(1, xq.shape[1], 1, -1)).flatten(3)

    g = torch.Generator().manual_seed(7)
    xq = torch.randn(2, 5, 3, 8, generator=g)
    freqs = torch.outer(torch.arange(5.0), 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8)))
    kx, tx = _both(xq)
    kf, tf = _both(freqs)
    kout, tout = rope(kiln, kx, kf), rope(torch, tx, tf)
    _close(kout, tout, rtol=1e-5, atol=1e-5)
    weights = torch.randn(tout.shape, generator=g)
    (kout * _k(weights)).sum().backward()
    (tout * weights).sum().backward()
    _close(kx.grad, tx.grad, rtol=1e-4, atol=1e-5)
    _close(kf.grad, tf.grad, rtol=1e-4, atol=1e-4)


def test_complex_leaf_accumulates_gradients_across_uses():
    z = _rand((4,), seed=8)
    kz, tz = _both(z)
    kiln.view_as_real(kz * kz + kz).sum().backward()
    torch.view_as_real(tz * tz + tz).sum().backward()
    _close(kz.grad, tz.grad, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_silu_of_complex_tensors(dtype):
    z = _rand((3, 5), dtype=dtype, seed=11) * 3
    kz, tz = _both(z)
    _close(kiln.nn.functional.silu(kz), torch.nn.functional.silu(tz.detach()), rtol=1e-5)
    inplace = _k(z)
    kiln.nn.functional.silu(inplace, inplace=True)
    _close(inplace, torch.nn.functional.silu(z), rtol=1e-5)
    # torch has no complex silu gradient ("does not support automatic differentiation for outputs with
    # complex dtype"); kiln's must equal that of torch's composite z * sigmoid(z), conjugate convention.
    g = _rand((3, 5), dtype=dtype, seed=12)
    (kg,) = kiln.autograd.grad(kiln.nn.functional.silu(kz), [kz], _k(g))
    (tg,) = torch.autograd.grad(tz * torch.sigmoid(tz), [tz], g)
    _close(kg, tg, rtol=1e-4, atol=1e-5)


# --- what is not supported yet --------------------------------------------------------------

def test_unsupported_op_raises_not_implemented_naming_the_dtype():
    z = kiln.ones(3, dtype=kiln.complex64)
    with pytest.raises(NotImplementedError, match="ComplexFloat"):
        kiln.nn.functional.gelu(z)  # torch refuses it too ("GeluKernelImpl" not implemented)
    with pytest.raises(NotImplementedError, match="ComplexDouble"):
        kiln.lgamma(kiln.ones(2, dtype=kiln.complex128))
    assert z.sum().item() == 3  # and nothing is left broken


def test_complex_cannot_be_cast_to_a_real_out_tensor():
    z = kiln.ones(2, dtype=kiln.complex64)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Float"):
        kiln.add(z, z, out=kiln.empty(2))


# --- matrix products (cgemm / zgemm) ----------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((4,), (4,)), ((3, 4), (4,)), ((2, 3, 4), (4, 2)),
                                    ((2, 3, 4), (2, 4, 5)), ((1, 3, 4), (5, 4, 2)), ((0, 4), (4, 3)), ((3, 0), (0, 2))])
def test_matmul_values_and_gradients_match_torch(dtype, shapes):
    a, b = _rand(shapes[0], dtype, seed=10), _rand(shapes[1], dtype, seed=11)
    ka, ta = _both(a)
    kb, tb = _both(b)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == torch.complex64 else dict(rtol=1e-10, atol=1e-12)
    kout, tout = ka @ kb, ta @ tb
    _close(kout, tout, **tol)
    weights = _rand(tuple(tout.shape), dtype, seed=12)
    if tout.numel() == 0:  # torch 2.13's view_as_real backward fails on an empty gradient ("stride 1"); kiln's doesn't
        kiln.view_as_real(kout * _k(weights)).sum().backward()
        assert tuple(ka.grad.shape) == tuple(a.shape) and not ka.grad.abs().sum().item()
        assert tuple(kb.grad.shape) == tuple(b.shape) and not kb.grad.abs().sum().item()
        return
    kiln.view_as_real(kout * _k(weights)).sum().backward()
    torch.view_as_real(tout * weights).sum().backward()
    _close(ka.grad, ta.grad, **tol)
    _close(kb.grad, tb.grad, **tol)


def test_transposed_operands_and_addmm_outer_linear_match_torch():
    a, b, c = _rand((4, 3), seed=13), _rand((5, 4), seed=14), _rand((3, 5), seed=15)
    _close(kiln.mm(_k(a).t(), _k(b).t()), torch.mm(a.t(), b.t()), rtol=1e-4, atol=1e-5)
    _close(kiln.addmm(_k(c), _k(a).t(), _k(b).t(), beta=0.5, alpha=2.0),
           torch.addmm(c, a.t(), b.t(), beta=0.5, alpha=2.0), rtol=1e-4, atol=1e-5)
    _close(kiln.outer(_k(a[:, 0]), _k(b[0])), torch.outer(a[:, 0], b[0]), rtol=1e-5)
    w = _rand((2, 3), seed=16)
    _close(kiln.nn.functional.linear(_k(a), _k(w)), torch.nn.functional.linear(a, w), rtol=1e-4, atol=1e-5)


def test_product_of_complex_and_real_operands_is_torchs_dtype_error():
    with pytest.raises(RuntimeError) as expected:
        torch.mm(torch.ones(2, 2, dtype=torch.complex64), torch.ones(2, 2))
    with pytest.raises(RuntimeError) as got:
        kiln.mm(kiln.ones(2, 2, dtype=kiln.complex64), kiln.ones(2, 2))
    assert str(got.value) == str(expected.value).replace("c10::complex<float>", "c10::complex<float>")


# --- unary functions ---------------------------------------------------------------------------

UNARY = ["reciprocal", "sqrt", "rsqrt", "exp", "log", "sin", "cos", "tan", "sinh", "cosh", "tanh", "sigmoid"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_unary_values_and_gradients_match_torch(name, dtype):
    z = _rand((3, 4), dtype, seed=20)[:, ::2]  # strided input
    kz, tz = _both(z)
    kout, tout = getattr(kiln, name)(kz), getattr(torch, name)(tz)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == torch.complex64 else dict(rtol=1e-10, atol=1e-12)
    _close(kout, tout, **tol)
    _close(getattr(_k(z), name)(), getattr(z, name)(), **tol)
    weights = _rand(tuple(tout.shape), dtype, seed=21)
    kiln.view_as_real(kout * _k(weights)).sum().backward()
    torch.view_as_real(tout * weights).sum().backward()
    _close(kz.grad, tz.grad, **tol)


@pytest.mark.parametrize("name", ["exp", "sqrt", "sin", "tanh", "sigmoid"])
def test_unary_in_place_and_out_forms_match_torch(name):
    z = _rand((5,), torch.complex128, seed=22)
    k = _k(z)
    getattr(k, name + "_")()
    _close(k, getattr(z.clone(), name + "_")(), rtol=1e-12)
    out = kiln.empty(5, dtype=kiln.complex128)
    getattr(kiln, name)(_k(z), out=out)
    _close(out, getattr(torch, name)(z), rtol=1e-12)


def test_second_derivative_through_complex_exp_matches_torch():
    z = _rand((4,), torch.complex128, seed=23)
    kz, tz = _both(z)
    (kg,) = kiln.autograd.grad(kiln.view_as_real(kiln.exp(kz) * kz).pow(2).sum(), kz, create_graph=True)
    (tg,) = torch.autograd.grad(torch.view_as_real(torch.exp(tz) * tz).pow(2).sum(), tz, create_graph=True)
    _close(kg, tg, rtol=1e-10)
    kiln.view_as_real(kg).sum().backward()
    torch.view_as_real(tg).sum().backward()
    _close(kz.grad, tz.grad, rtol=1e-10, atol=1e-12)


def test_real_to_complex_conversion_carries_the_gradient():
    x = torch.randn(4, dtype=torch.float64)
    kx, tx = _k(x).requires_grad_(), x.clone().requires_grad_()
    w = _rand((4,), torch.complex128, seed=30)
    kiln.view_as_real(kx.to(kiln.complex128) * _k(w)).sum().backward()
    torch.view_as_real(tx.to(torch.complex128) * w).sum().backward()
    _close(kx.grad, tx.grad, rtol=1e-12)


@pytest.mark.parametrize("shape", [(5, 7), (21, 64), (70, 90)])
def test_transposed_complex128_copies_are_exact(shape):
    """16-byte elements take the element-wise copy, not the transpose tiles (which were for 1-8 bytes)."""
    z = _rand(shape, torch.complex128, seed=31)
    _close(_k(z).t().contiguous(), z.t().contiguous(), rtol=0, atol=0)
    _close(_k(z)[:, 1:].t().clone(), z[:, 1:].t().clone(), rtol=0, atol=0)
