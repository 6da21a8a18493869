"""Complex tensors, part two, against torch: Python complex numbers as operands and fill
values (the C++ Scalar's complex kind), indexing and the copying kernels, equality and the
predicates, conjugate transposes, and gradients through each. test_complex.py holds the
dtypes, creation, views and arithmetic."""

import numpy as np
import pytest
import torch

import kiln
from complex_compare import assert_close as _close
from complex_compare import dtype_name as _name
from complex_compare import seeded_randn as _rand
from complex_compare import to_kiln as _k
from torch_compare import assert_same_error as _same_error

COMPLEX = [torch.complex64, torch.complex128]


# --- Python complex numbers as operands ------------------------------------------------------

SCALAR_OPERATORS = {
    "mul": lambda x, c: x * c, "rmul": lambda x, c: c * x, "add": lambda x, c: x + c, "radd": lambda x, c: c + x,
    "sub": lambda x, c: x - c, "rsub": lambda x, c: c - x, "div": lambda x, c: x / c, "rdiv": lambda x, c: c / x,
    "eq": lambda x, c: x == c, "ne": lambda x, c: x != c,
}


@pytest.mark.parametrize("op", list(SCALAR_OPERATORS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool, *COMPLEX])
def test_python_complex_operand_matches_torch(op, dtype):
    base = _rand((3, 4), torch.complex128, seed=3)
    x = base.real.to(dtype) if not dtype.is_complex else base.to(dtype)
    if op in ("eq", "ne"):
        x[0, 0] = 2 - 1j if dtype.is_complex else x[0, 0]
    fn = SCALAR_OPERATORS[op]
    if dtype == torch.bool and op in ("sub", "rsub"):
        _same_error(lambda: fn(_k(x), 2 - 1j), lambda: fn(x, 2 - 1j))  # no subtraction with a bool tensor
        return
    _close(fn(_k(x), 2 - 1j), fn(x, 2 - 1j))


def test_python_complex_promotion_and_queries():
    for dtype, value in [(torch.float32, 1j), (torch.float64, 1j), (torch.int32, 2j), (torch.complex64, 1.5)]:
        k_dtype = getattr(kiln, _name(dtype))
        assert _name(kiln.result_type(kiln.ones(2, dtype=k_dtype), value)) == _name(
            torch.result_type(torch.ones(2, dtype=dtype), value))
    assert kiln.result_type(1j, 2) is kiln.complex64
    assert kiln.result_type(2.0, 1j) is kiln.complex64
    assert not kiln.can_cast(kiln.complex64, kiln.float64)
    assert kiln.can_cast(kiln.float32, kiln.complex64)
    assert kiln.can_cast(kiln.int64, kiln.complex128)


def test_factories_and_fills_take_complex_numbers():
    _close(kiln.full((2, 3), 1 - 2j), torch.full((2, 3), 1 - 2j))
    _close(kiln.full((2,), 3j, dtype=kiln.complex128), torch.full((2,), 3j, dtype=torch.complex128))
    _close(kiln.zeros(3, dtype=kiln.complex64).fill_(2 + 5j), torch.zeros(3, dtype=torch.complex64).fill_(2 + 5j))
    _close(kiln.ones(2, 2, dtype=kiln.complex64).new_full((3,), 1j),
           torch.ones(2, 2, dtype=torch.complex64).new_full((3,), 1j))
    # a complex number with no imaginary part fills a real tensor, as in torch
    _close(kiln.zeros(3).fill_(2 + 0j), torch.zeros(3).fill_(2 + 0j))
    z = _rand((4,), torch.complex64)
    k = _k(z)
    z[1], k[1] = 7 - 1j, 7 - 1j
    z[2:], k[2:] = 1j, 1j
    _close(k, z)


def test_complex_number_into_a_real_tensor_is_refused_as_torch_does():
    _same_error(lambda: kiln.zeros(3).fill_(1j), lambda: torch.zeros(3).fill_(1j))
    _same_error(lambda: kiln.zeros(3).add_(1j), lambda: torch.zeros(3).add_(1j))
    _same_error(lambda: kiln.zeros(3).add(1, alpha=1j), lambda: torch.zeros(3).add(1, alpha=1j))
    _same_error(lambda: kiln.full((2,), 1j, dtype=kiln.float32), lambda: torch.full((2,), 1j, dtype=torch.float32))

    def assign(module):
        x = module.zeros(3)
        x[0] = 1j
    _same_error(lambda: assign(kiln), lambda: assign(torch))
    x = kiln.arange(4.0)
    with pytest.raises(RuntimeError, match="^result type ComplexFloat can't be cast to the desired output type Float$"):
        x.mul_(1j)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]  # nothing written before the error


def test_complex_alpha_and_where_and_masked_fill_with_complex_numbers():
    a, b = _rand((3, 4), seed=1), _rand((3, 4), seed=2)
    _close(kiln.add(_k(a), _k(b), alpha=2 - 1j), torch.add(a, b, alpha=2 - 1j))
    _close(kiln.sub(_k(a), _k(b), alpha=1j), torch.sub(a, b, alpha=1j))
    cond = a.real > 0
    _close(kiln.where(_k(cond), _k(a), 1j), torch.where(cond, a, 1j))
    _close(kiln.where(_k(cond), _k(a), _k(b)), torch.where(cond, a, b))
    _close(kiln.where(_k(cond), _k(a.real), 1j), torch.where(cond, a.real, 1j))
    _close(_k(a).masked_fill(_k(cond), 3 - 3j), a.masked_fill(cond, 3 - 3j))
    _close(kiln.addcmul(_k(a), _k(a), _k(b), value=0.5j), torch.addcmul(a, a, b, value=0.5j))
    _close(kiln.addcdiv(_k(a), _k(a), _k(b), value=2), torch.addcdiv(a, a, b, value=2))
    for w in (0.3, 0.7 + 0.2j):
        _close(kiln.lerp(_k(a), _k(b), w), torch.lerp(a, b, w))
    _close(kiln.lerp(_k(a), _k(b), _k(b)), torch.lerp(a, b, b))


def test_numpy_complex_scalar_is_a_number():
    x = _rand((3,), torch.complex128)
    for value in (np.complex128(1 - 2j), np.complex64(2 + 1j)):
        _close(_k(x) * value, x * complex(value), rtol=1e-6)


def test_gradient_through_a_complex_scalar_product():
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    z = _rand((5,), torch.complex128, seed=4, requires_grad=True)
    kx, kz = _k(x), _k(z)
    ((x * (1 - 2j) + z * 3j - 1j * z) * z.conj()).abs().sum().backward()
    ((kx * (1 - 2j) + kz * 3j - 1j * kz) * kz.conj()).abs().sum().backward()
    _close(kx.grad, x.grad)
    _close(kz.grad, z.grad)
    ka, kb = _k(z.detach()).requires_grad_(), _k(z.detach() * 2).requires_grad_()
    a, b = z.detach().clone().requires_grad_(), (z.detach() * 2).requires_grad_()
    torch.add(a, b, alpha=2 - 1j).abs().sum().backward()
    kiln.add(ka, kb, alpha=2 - 1j).abs().sum().backward()
    _close(ka.grad, a.grad)
    _close(kb.grad, b.grad)


# --- indexing and the copying kernels ----------------------------------------------------------

INDEX = torch.tensor([2, 0, 2])
COPYING_OPS = {
    "index_select": lambda m, x: x.index_select(1, m.tensor([2, 0, 2])),
    "gather": lambda m, x: x.gather(1, m.tensor([[0, 1], [1, 2], [3, 3]])),
    "advanced_index": lambda m, x: x[m.tensor([0, 2, 2])],
    "two_index_tensors": lambda m, x: x[m.tensor([0, 2]), m.tensor([1, 3])],
    "bool_mask": lambda m, x: x[x.real > 0],
    "take": lambda m, x: x.take(m.tensor([0, 5, 11])),
    "take_along_dim": lambda m, x: m.take_along_dim(x, m.tensor([[0], [2], [1]]), dim=1),
    "masked_select": lambda m, x: x.masked_select(x.imag > 0),
    "flip": lambda m, x: x.flip(0, 1),
    "roll": lambda m, x: x.roll((1, -1), (0, 1)),
    "repeat": lambda m, x: x.repeat(2, 1, 2),
    "tril": lambda m, x: x.tril(-1),
    "triu": lambda m, x: x.triu(1),
    "diag_embed": lambda m, x: m.diag_embed(x),
    "diag": lambda m, x: m.diag(x[0]),
    "rot90": lambda m, x: m.rot90(x),
    "transposed_copy": lambda m, x: x.t().contiguous(),
    "where_self": lambda m, x: m.where(x.real > 0, x, x * 2),
    "masked_fill": lambda m, x: x.masked_fill(x.real > 0, 0.5j),
    "index_put": lambda m, x: x.index_put((m.tensor([0, 2]),), x[1] * 2),
    "index_put_accumulate": lambda m, x: x.index_put((m.tensor([0, 0]),), x[1:3] * 2, accumulate=True),
    "index_add": lambda m, x: x.index_add(0, m.tensor([0, 0, 2]), x * 2),
    "index_fill": lambda m, x: x.index_fill(1, m.tensor([1, 3]), 2 - 1j),
    "scatter": lambda m, x: m.zeros(3, 4, dtype=x.dtype).scatter(1, m.tensor([[0, 1], [1, 2], [3, 0]]), x[:, :2]),
    "scatter_add": lambda m, x: x.scatter_add(1, m.tensor([[0, 0], [1, 1], [3, 3]]), x[:, :2]),
    "masked_scatter": lambda m, x: x.masked_scatter(x.real > 0, x.flip(0) * 3),
}


@pytest.mark.parametrize("name", list(COPYING_OPS))
@pytest.mark.parametrize("dtype", COMPLEX)
def test_copying_op_values_and_gradients_match_torch(name, dtype):
    x = _rand((3, 4), dtype, seed=5)
    x[0, 1] = 0  # a zero element for the mask-based ops and nonzero
    x.requires_grad_()
    kx = _k(x)
    fn = COPYING_OPS[name]
    k_out, t_out = fn(kiln, kx), fn(torch, x)
    _close(k_out, t_out)
    w = _rand(tuple(t_out.shape), dtype, seed=6)
    (t_out * w).real.sum().backward()
    (k_out * _k(w)).real.sum().backward()
    _close(kx.grad, x.grad)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_strided_and_in_place_indexing(dtype):
    x = _rand((4, 6), dtype, seed=7)
    kx = _k(x)
    _close(kx[:, ::2][kiln.tensor([3, 0])], x[:, ::2][torch.tensor([3, 0])])
    _close(kx.t()[kiln.tensor([5, 1])], x.t()[torch.tensor([5, 1])])
    _close(kx.t().index_select(0, kiln.tensor([4, 4])), x.t().index_select(0, torch.tensor([4, 4])))
    kx[kiln.tensor([0, 3]), 1:3] = 9 - 9j
    x[torch.tensor([0, 3]), 1:3] = 9 - 9j
    _close(kx, x)
    kx.tril_()
    x.tril_()
    _close(kx, x)
    _close(kx.nonzero(), x.nonzero())
    _close(kiln.count_nonzero(kx), torch.count_nonzero(x))
    _close(kiln.eye(3, dtype=getattr(kiln, _name(dtype))), torch.eye(3, dtype=dtype))


def test_index_out_of_range_on_complex_is_an_index_error():
    x = _rand((3, 4))
    _same_error(lambda: _k(x)[kiln.tensor([5])], lambda: x[torch.tensor([5])])
    _same_error(lambda: _k(x).index_select(0, kiln.tensor([4])), lambda: x.index_select(0, torch.tensor([4])))
    _same_error(lambda: _k(x).gather(1, kiln.tensor([[4]])), lambda: x.gather(1, torch.tensor([[4]])))


def test_ordered_reductions_still_refuse_complex():
    # complex numbers are unordered: torch refuses these, and so does kiln
    x = _rand((3, 4))
    for name in ("lt", "ge"):
        with pytest.raises((RuntimeError, NotImplementedError)):
            getattr(_k(x), name)(_k(x))
    with pytest.raises((RuntimeError, NotImplementedError)):
        _k(x).scatter_reduce(1, kiln.tensor([[0], [1], [2]]), _k(x)[:, :1], "amax")


# --- equality and predicates ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", COMPLEX)
def test_equality_and_predicates_match_torch(dtype):
    x = _rand((2, 5), dtype, seed=8)
    y = x.clone()
    y[0, 1] = y[0, 1] + 1j  # same real part, different imaginary part
    y[1, 2] = complex(float("nan"), 1)
    y[1, 3] = complex(1, float("inf"))
    y[1, 4] = complex(float("-inf"), float("nan"))
    kx, ky = _k(x), _k(y)
    _close(kx == ky, x == y)
    _close(kx != ky, x != y)
    _close(kiln.eq(kx, ky), torch.eq(x, y))
    for name in ("isnan", "isinf", "isfinite"):
        _close(getattr(kiln, name)(ky), getattr(torch, name)(y))
    _close(kiln.isclose(kx, ky), torch.isclose(x, y))
    assert kiln.allclose(kx, kx + 1e-9) == torch.allclose(x, x + 1e-9)
    assert kiln.equal(kx, kx.clone()) and not kiln.equal(kx, ky)
    zero = torch.zeros(3, dtype=dtype)
    zero[1] = 1j  # nonzero only in its imaginary part
    for name in ("any", "all"):
        _close(getattr(_k(zero), name)(), getattr(zero, name)())
    _close(kiln.logical_not(_k(zero)), torch.logical_not(zero))
    _close(kiln.logical_and(_k(zero), _k(x[0, :3])), torch.logical_and(zero, x[0, :3]))


# --- conjugate transposes ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", COMPLEX)
def test_conjugate_transposes_and_vdot_conjugate(dtype):
    x = _rand((2, 3, 4), dtype, seed=9)
    _close(_k(x).mH, x.mH)
    _close(_k(x).adjoint(), x.adjoint())
    _close(_k(x[0]).H, x[0].H)
    _close(_k(x[0]).T, x[0].T)  # a plain transpose, no conjugate
    a, b = _rand((6,), dtype, seed=1), _rand((6,), dtype, seed=2)
    _close(kiln.vdot(_k(a), _k(b)), torch.vdot(a, b))
    real = torch.randn(3, 4, dtype=torch.float64)
    _close(_k(real).mH, real.mH)
    a.requires_grad_()
    ka = _k(a)
    torch.vdot(a, b).abs().backward()
    kiln.vdot(ka, _k(b)).abs().backward()
    _close(ka.grad, a.grad)


# --- elementwise math, powers and reductions ------------------------------------------------------

MATH_OPS = {
    "log1p": lambda m, x: x.log1p(), "expm1": lambda m, x: x.expm1(), "log2": lambda m, x: x.log2(),
    "log10": lambda m, x: x.log10(), "exp2": lambda m, x: m.exp2(x), "asin": lambda m, x: x.asin(),
    "acos": lambda m, x: x.acos(), "atan": lambda m, x: x.atan(), "asinh": lambda m, x: x.asinh(),
    "acosh": lambda m, x: x.acosh(), "atanh": lambda m, x: x.atanh(), "arcsin": lambda m, x: m.arcsin(x),
    "square": lambda m, x: x.square(), "sinc": lambda m, x: m.sinc(x),
    "pow_2": lambda m, x: x ** 2, "pow_3": lambda m, x: x.pow(3), "pow_half": lambda m, x: x ** 0.5,
    "pow_minus_1": lambda m, x: x ** -1, "pow_minus_2": lambda m, x: x ** -2, "pow_1_7": lambda m, x: x ** 1.7,
    "pow_complex": lambda m, x: x ** (0.5 + 1j), "pow_tensor": lambda m, x: x ** x.flip(0),
    "rpow": lambda m, x: 2 ** x, "rpow_complex": lambda m, x: (1 + 1j) ** x,
    "prod_all": lambda m, x: x.prod(), "prod_dim": lambda m, x: x.prod(1), "prod_keep": lambda m, x: x.prod(0, True),
    "cumsum": lambda m, x: x.cumsum(1), "cumsum_0": lambda m, x: x.cumsum(0), "cumprod": lambda m, x: x.cumprod(1),
    "var": lambda m, x: x.var(1), "var_all": lambda m, x: x.var(), "std": lambda m, x: x.std(0, correction=0),
    "norm": lambda m, x: x.norm(), "vector_norm_1": lambda m, x: m.linalg.vector_norm(x, 1, dim=1),
    "vector_norm_inf": lambda m, x: m.linalg.vector_norm(x, float("inf"), dim=0),
    "vector_norm_3": lambda m, x: m.linalg.vector_norm(x, 3), "linalg_norm": lambda m, x: m.linalg.norm(x, dim=1),
    "mean_abs": lambda m, x: x.abs().mean(),
}


@pytest.mark.parametrize("name", list(MATH_OPS))
@pytest.mark.parametrize("dtype", COMPLEX)
def test_math_op_values_and_gradients_match_torch(name, dtype):
    x = (_rand((3, 4), dtype, seed=11) * 0.6).requires_grad_()
    kx = _k(x)
    fn = MATH_OPS[name]
    k_out, t_out = fn(kiln, kx), fn(torch, x)
    rtol = 1e-4 if dtype == torch.complex64 else 1e-9
    _close(k_out, t_out, rtol=rtol, atol=1e-5)
    w = _rand(tuple(t_out.shape), dtype, seed=12) if t_out.dtype.is_complex else torch.rand(t_out.shape).to(t_out.dtype)
    (t_out * w).real.sum().backward()
    (k_out * _k(w)).real.sum().backward()
    _close(kx.grad, x.grad, rtol=rtol * 10, atol=1e-4)


def test_precise_log1p_and_expm1_near_zero():
    z = torch.tensor([1e-8 + 2e-8j, -3e-9 + 1e-9j], dtype=torch.complex64)
    for name in ("log1p", "expm1"):
        _close(getattr(_k(z), name)(), getattr(z, name)(), rtol=1e-5, atol=0)


def test_products_with_zeros_and_empty_dims():
    x = _rand((2, 3), torch.complex128, seed=13)
    x[0, 1] = 0
    x.requires_grad_()
    kx = _k(x)
    _close(kx.prod(1), x.prod(1), rtol=1e-12)
    x.prod(1).abs().sum().backward()
    kx.prod(1).abs().sum().backward()
    _close(kx.grad, x.grad, rtol=1e-10)
    empty = torch.zeros(2, 0, dtype=torch.complex64)
    _close(_k(empty).prod(1), empty.prod(1))
    _close(_k(empty).prod(), empty.prod())
    _close(_k(empty).cumsum(1), empty.cumsum(1))
    _close(kiln.tensor(2 + 1j).prod(0), torch.tensor(2 + 1j).prod(0))
    _close(kiln.tensor(2 + 1j).cumprod(0), torch.tensor(2 + 1j).cumprod(0))


def test_pow_zero_base_and_out_forms():
    z = torch.tensor([0j, 1 + 1j, -2 + 0j], dtype=torch.complex128)
    _close(_k(z) ** 0, z ** 0)
    _close(_k(z) ** 2, z ** 2)
    _close(kiln.pow(_k(z), 1), torch.pow(z, 1))
    out = kiln.empty(3, dtype=kiln.complex128)
    kiln.pow(_k(z), 2.5, out=out)
    _close(out, torch.pow(z, 2.5), rtol=1e-12)
    _close(_k(z).pow_(2), z.clone().pow_(2))


# --- factories ----------------------------------------------------------------------------------

def test_complex_random_factories_have_torchs_distribution():
    kiln.manual_seed(0)
    z = kiln.randn(200_000, dtype=kiln.complex64)
    assert z.dtype is kiln.complex64
    # each part has std 1/sqrt(2), so E|z|^2 = 1, as torch.randn
    assert abs(z.real.std().item() - 0.5 ** 0.5) < 0.01 and abs(z.imag.std().item() - 0.5 ** 0.5) < 0.01
    assert abs((z.abs() ** 2).mean().item() - 1.0) < 0.02
    u = kiln.rand(100_000, dtype=kiln.complex128)
    assert 0 <= u.real.min().item() and u.real.max().item() < 1 and abs(u.imag.mean().item() - 0.5) < 0.01
    n = kiln.empty(100_000, dtype=kiln.complex64).normal_(2, 3)
    assert abs(n.real.mean().item() - 2) < 0.05 and abs(n.imag.mean().item() - 2) < 0.05
    assert abs(n.real.std().item() - 3 / 2 ** 0.5) < 0.05


def test_linspace_with_complex_bounds():
    for start, end, steps in [(0, 1 + 1j, 5), (-2j, 3 + 0j, 7), (1 + 1j, 1 + 1j, 1)]:
        _close(kiln.linspace(start, end, steps), torch.linspace(start, end, steps))
    _close(kiln.linspace(0, 2j, 4, dtype=kiln.complex128), torch.linspace(0, 2j, 4, dtype=torch.complex128))
    _same_error(lambda: kiln.linspace(0, 1j, 3, dtype=kiln.float32), lambda: torch.linspace(0, 1j, 3, dtype=torch.float32))


def test_python_conversions_of_a_complex_tensor():
    for value in (1 + 2j, 3 + 0j, -2j):
        t, k = torch.tensor(value), kiln.tensor(value)
        assert complex(k) == complex(t)
        for convert in (float, int):
            try:
                expected = convert(t)
            except RuntimeError as error:
                with pytest.raises(RuntimeError, match="without overflow"):
                    convert(k)
                assert "without overflow" in str(error)
            else:
                assert convert(k) == expected
    _same_error(lambda: [1, 2, 3][kiln.tensor(1j)], lambda: [1, 2, 3][torch.tensor(1j)])


def test_nan_to_num_scatter_reduce_matrix_exp_and_normalize_on_complex():
    z = torch.tensor([complex(float("nan"), 1), complex(float("inf"), float("-inf")), 2 + 3j, complex(0, float("nan"))])
    for kwargs in ({}, {"nan": 5.0, "posinf": 1.0, "neginf": -2.0}):
        _close(kiln.nan_to_num(_k(z), **kwargs), torch.nan_to_num(z, **kwargs))
        k = _k(z)
        k.nan_to_num_(**kwargs)
        _close(k, torch.nan_to_num(z, **kwargs))
    out = kiln.empty(4, dtype=kiln.complex64)
    kiln.nan_to_num(_k(z), out=out)
    _close(out, torch.nan_to_num(z))

    src = _rand((3, 5), torch.complex128, seed=20)
    index = torch.tensor([[0, 1, 0, 2, 1], [2, 2, 0, 0, 1], [1, 0, 1, 0, 0]])
    for reduce in ("sum", "prod", "mean"):
        for include_self in (True, False):
            base = _rand((3, 3), torch.complex128, seed=21)
            s = src.clone()
            kb, ks = _k(base), _k(s)
            t_out = base.scatter_reduce(1, index, s, reduce, include_self=include_self)
            k_out = kb.scatter_reduce(1, _k(index), ks, reduce, include_self=include_self)
            _close(k_out, t_out, rtol=1e-12)
    # torch refuses complex scatter_reduce gradients (at the forward; kiln at the backward)
    with pytest.raises(RuntimeError, match="does not support automatic differentiation"):
        _k(src).requires_grad_().scatter_reduce(1, _k(index), _k(src), "sum").abs().sum().backward()
    _same_error(lambda: _k(src).scatter_reduce(1, _k(index), _k(src), "amax"),
                lambda: src.scatter_reduce(1, index, src, "amax"))

    A = _rand((2, 3, 3), torch.complex128, seed=22)
    _close(kiln.linalg.matrix_exp(_k(A)), torch.linalg.matrix_exp(A), rtol=1e-10)
    x = _rand((4, 6), torch.complex64, seed=23)
    _close(kiln.nn.functional.normalize(_k(x), dim=-1), torch.nn.functional.normalize(x, dim=-1))
    _close(kiln.nn.functional.normalize(_k(x), p=1, dim=0), torch.nn.functional.normalize(x, p=1, dim=0))


# --- convolutions -------------------------------------------------------------------------------

CONVS = {
    "conv1d": ((2, 3, 10), (4, 3, 3), {"padding": 1, "stride": 2}),
    "conv2d": ((2, 2, 6, 5), (3, 2, 3, 2), {"padding": "same"}),
    "conv2d_groups": ((1, 4, 5, 5), (4, 2, 3, 3), {"groups": 2, "dilation": 2, "padding": 2}),
    "conv3d": ((1, 2, 4, 4, 4), (2, 2, 2, 2, 2), {}),
    "conv_transpose1d": ((2, 3, 6), (3, 2, 3), {"stride": 2}),
    "conv_transpose2d": ((1, 2, 4, 4), (2, 3, 3, 3), {"padding": 1, "output_padding": 1, "stride": 2}),
}


@pytest.mark.parametrize("name", list(CONVS))
@pytest.mark.parametrize("mixed", ["complex", "real_input", "real_weight"])
def test_complex_convolutions_match_torch(name, mixed):
    in_shape, w_shape, kwargs = CONVS[name]
    fn = name.removesuffix("_groups")
    x = _rand(in_shape, torch.complex128, seed=30)
    w = _rand(w_shape, torch.complex128, seed=31)
    if mixed == "real_input":
        x = x.real.contiguous()
    if mixed == "real_weight":
        w = w.real.contiguous()
    bias_size = w_shape[1] * kwargs.get("groups", 1) if "transpose" in name else w_shape[0]
    b = _rand((bias_size,), torch.complex128, seed=32)
    if mixed != "complex":  # torch does not promote a real operand of a complex convolution
        # torch's text depends on the backend it picks ("expected scalar type ...", c10 type names): kiln's is one
        error = _same_error(lambda: getattr(kiln.nn.functional, fn)(_k(x), _k(w), _k(b), **kwargs),
                            lambda: getattr(torch.nn.functional, fn)(x, w, b, **kwargs), message=False)
        types = ("Double", "ComplexDouble") if mixed == "real_input" else ("ComplexDouble", "Double")
        assert str(error) == f"Input type ({types[0]}) and weight type ({types[1]}) should be the same"
        return
    x.requires_grad_(), w.requires_grad_(), b.requires_grad_()
    kx, kw, kb = _k(x), _k(w), _k(b)
    t_out = getattr(torch.nn.functional, fn)(x, w, b, **kwargs)
    k_out = getattr(kiln.nn.functional, fn)(kx, kw, kb, **kwargs)
    _close(k_out, t_out, rtol=1e-10, atol=1e-12)
    g = _rand(tuple(t_out.shape), torch.complex128, seed=33)
    (t_out * g).real.sum().backward()
    (k_out * _k(g)).real.sum().backward()
    for k_t, t_t in ((kx, x), (kw, w), (kb, b)):
        _close(k_t.grad, t_t.grad, rtol=1e-10, atol=1e-12)
