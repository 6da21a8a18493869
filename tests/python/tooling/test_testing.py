"""kiln.testing against torch.testing: assert_close's verdicts, exception types and
messages (word for word, "kiln" for "torch") over tensors of every dtype, complex
tensors, scalars, numpy inputs, nested sequences and mappings and the check_* /
msg options; make_tensor's value ranges, layouts, clamping and errors; and the
deprecated assert_allclose."""

import math
import pickle
import warnings

import numpy as np
import pytest
import torch

import kiln
from kiln.testing import assert_close, make_tensor
from torch_compare import as_kiln_text, raised

NAN, INF = float("nan"), float("inf")

# Each case builds its inputs and calls assert_close through the module T (kiln or torch).
CLOSE_CASES = {
    "float32_mismatch": lambda T: T.testing.assert_close(T.tensor([1., 2., 3.]), T.tensor([1., 2.1, 3.])),
    "float32_two_mismatches": lambda T: T.testing.assert_close(T.tensor([1., 2., 3.]), T.tensor([1.5, 2.5, 3.])),
    "float32_close": lambda T: T.testing.assert_close(T.tensor([1., 2.]), T.tensor([1., 2.000001])),
    "float32_atol_boundary": lambda T: T.testing.assert_close(T.tensor([0., 1.]), T.tensor([1e-6, 1.])),
    "float32_small_offset": lambda T: T.testing.assert_close(T.tensor([0., 1.]), T.tensor([0., 1.]) + 1e-6),
    "float64_mismatch": lambda T: T.testing.assert_close(T.tensor([1., 2.], dtype=T.float64),
                                                         T.tensor([1., 2.0000003], dtype=T.float64)),
    "float16_mismatch": lambda T: T.testing.assert_close(T.tensor([1.], dtype=T.float16),
                                                         T.tensor([1.01], dtype=T.float16)),
    "float16_close": lambda T: T.testing.assert_close(T.tensor([1.], dtype=T.float16),
                                                      T.tensor([1.0009765625], dtype=T.float16)),
    "bfloat16_mismatch": lambda T: T.testing.assert_close(T.tensor([1.], dtype=T.bfloat16),
                                                          T.tensor([1.1], dtype=T.bfloat16)),
    "bfloat16_close": lambda T: T.testing.assert_close(T.tensor([1.], dtype=T.bfloat16),
                                                       T.tensor([1.0078125], dtype=T.bfloat16)),
    "int_mismatch": lambda T: T.testing.assert_close(T.tensor([1, 2]), T.tensor([1, 3])),
    "int8_mismatch": lambda T: T.testing.assert_close(T.tensor([100, -100], dtype=T.int8),
                                                      T.tensor([-100, 100], dtype=T.int8)),
    "uint8_mismatch": lambda T: T.testing.assert_close(T.tensor([0, 255], dtype=T.uint8),
                                                       T.tensor([255, 0], dtype=T.uint8)),
    "int_with_tolerance": lambda T: T.testing.assert_close(T.tensor([10, 20]), T.tensor([11, 20]), rtol=0.0,
                                                           atol=1.0),
    "bool_mismatch": lambda T: T.testing.assert_close(T.tensor([True, False]), T.tensor([True, True])),
    "zero_dim": lambda T: T.testing.assert_close(T.tensor(1.), T.tensor(1.5)),
    "zero_dim_int": lambda T: T.testing.assert_close(T.tensor(3), T.tensor(4)),
    "zero_dim_expected_zero": lambda T: T.testing.assert_close(T.tensor(1.), T.tensor(0.)),
    "matrix_index": lambda T: T.testing.assert_close(T.tensor([[1., 2.], [3., 4.]]), T.tensor([[1., 2.], [3., 5.]])),
    "3d_index": lambda T: T.testing.assert_close(T.zeros(2, 3, 4), T.zeros(2, 3, 4).index_fill(2, T.tensor([3]), 1.)),
    "ties_first_index": lambda T: T.testing.assert_close(T.tensor([1., 1., 1.]), T.tensor([2., 2., 2.])),
    "nan_unequal": lambda T: T.testing.assert_close(T.tensor([NAN, 1.]), T.tensor([NAN, 1.])),
    "nan_vs_number": lambda T: T.testing.assert_close(T.tensor([1., NAN, 5.]), T.tensor([1., 2., 6.])),
    "nan_equal": lambda T: T.testing.assert_close(T.tensor([NAN, 1.]), T.tensor([NAN, 1.]), equal_nan=True),
    "inf_equal": lambda T: T.testing.assert_close(T.tensor([INF, -INF]), T.tensor([INF, -INF])),
    "inf_sign": lambda T: T.testing.assert_close(T.tensor([1., INF]), T.tensor([1., -INF])),
    "inf_vs_large": lambda T: T.testing.assert_close(T.tensor([INF]), T.tensor([3e38])),
    "complex_mismatch": lambda T: T.testing.assert_close(T.tensor([1 + 1j, 2j]), T.tensor([1 + 1j, 2.5j])),
    "complex_close": lambda T: T.testing.assert_close(T.tensor([1 + 1j, 2j]), T.tensor([1 + 1.000001j, 2j])),
    "complex_imag_only": lambda T: T.testing.assert_close(T.tensor([3 + 4j]), T.tensor([3 + 4.1j])),
    "complex128_mismatch": lambda T: T.testing.assert_close(T.tensor([1 + 1j], dtype=T.complex128),
                                                            T.tensor([1 + 1.000001j], dtype=T.complex128)),
    "complex_nan_equal": lambda T: T.testing.assert_close(T.tensor([1 + 1j, complex(NAN, 0)]),
                                                          T.tensor([1 + 1j, complex(NAN, 1)]), equal_nan=True),
    "complex_nan_unequal": lambda T: T.testing.assert_close(T.tensor([1 + 1j, complex(NAN, 0)]),
                                                            T.tensor([1 + 1j, complex(NAN, 1)])),
    "complex_inf": lambda T: T.testing.assert_close(T.tensor([complex(INF, 1)]), T.tensor([complex(INF, 1)])),
    "complex_zero_dim": lambda T: T.testing.assert_close(T.tensor(1 + 1j), T.tensor(1 + 1.5j)),
    "complex_vs_float_promoted": lambda T: T.testing.assert_close(T.tensor([1 + 0j]), T.tensor([1.]),
                                                                  check_dtype=False),
    "complex_tolerance": lambda T: T.testing.assert_close(T.tensor([1 + 1j]), T.tensor([1.1 + 1j]), rtol=0.0,
                                                          atol=0.2),
    "dtype_mismatch": lambda T: T.testing.assert_close(T.tensor([1.]), T.tensor([1.], dtype=T.float64)),
    "dtype_unchecked": lambda T: T.testing.assert_close(T.tensor([1, 2], dtype=T.int32), T.tensor([1., 2.5]),
                                                        check_dtype=False),
    "dtype_unchecked_close": lambda T: T.testing.assert_close(T.tensor([1., 2.], dtype=T.float16),
                                                              T.tensor([1., 2.001]), check_dtype=False),
    "shape_mismatch": lambda T: T.testing.assert_close(T.tensor([1.]), T.tensor([1., 2.])),
    "stride_mismatch": lambda T: T.testing.assert_close(T.ones(2, 3).t(), T.ones(3, 2), check_stride=True),
    "stride_unchecked": lambda T: T.testing.assert_close(T.ones(2, 3).t(), T.ones(3, 2)),
    "layout_unchecked": lambda T: T.testing.assert_close(T.ones(2), T.ones(2), check_layout=False),
    "device_unchecked": lambda T: T.testing.assert_close(T.ones(2), T.ones(2), check_device=False),
    "half_tolerance": lambda T: T.testing.assert_close(T.tensor([1.]), T.tensor([1.]), rtol=1e-3),
    "half_tolerance_atol": lambda T: T.testing.assert_close(T.tensor([1.]), T.tensor([1.]), atol=1e-3),
    "explicit_tolerance": lambda T: T.testing.assert_close(T.tensor([1., 2.]), T.tensor([1.05, 2.]), rtol=0.0,
                                                           atol=0.1),
    "explicit_tolerance_fails": lambda T: T.testing.assert_close(T.tensor([1., 2.]), T.tensor([1.05, 2.]), rtol=0.01,
                                                                 atol=0.01),
    "zero_tolerance": lambda T: T.testing.assert_close(T.tensor([1., 2.]), T.tensor([1., 2.0000001]), rtol=0,
                                                       atol=0),
    "requires_grad": lambda T: T.testing.assert_close(T.ones(3, requires_grad=True) * 2, T.tensor([2., 2., 2.1])),
    "msg_string": lambda T: T.testing.assert_close(T.tensor([1.]), T.tensor([2.]), msg="custom"),
    "msg_callable": lambda T: T.testing.assert_close(T.tensor([[1., 2.], [3., 4.]]), T.tensor([[1., 2.], [3., 5.]]),
                                                     msg=lambda m: f"Header\n\n{m}\n\nFooter"),
    "msg_callable_nested": lambda T: T.testing.assert_close({"a": [T.tensor([1.])]}, {"a": [T.tensor([2.])]},
                                                            msg=lambda m: m.upper()),
    "msg_ignored_for_structure": lambda T: T.testing.assert_close([1, 2], [1, 2, 3], msg="custom"),
    "sequence_nested": lambda T: T.testing.assert_close([T.tensor([1.]), {"x": T.tensor([1., 2.])}],
                                                        [T.tensor([1.]), {"x": T.tensor([1., 2.5])}]),
    "sequence_equal": lambda T: T.testing.assert_close((T.tensor([1.]), [T.tensor([2])]),
                                                       [T.tensor([1.]), (T.tensor([2]),)]),
    "sequence_length": lambda T: T.testing.assert_close([1, 2], [1, 2, 3]),
    "sequence_of_scalars": lambda T: T.testing.assert_close([1.0, 2.0], [1.0, 2.5]),
    "mapping_keys": lambda T: T.testing.assert_close({"a": 1, "c": 2}, {"b": 1, "c": 2}),
    "mapping_values": lambda T: T.testing.assert_close({"b": T.tensor([1.]), "a": T.tensor([1.])},
                                                       {"a": T.tensor([1.]), "b": T.tensor([3.])}),
    "mapping_unsortable_keys": lambda T: T.testing.assert_close({1: 1.0, "a": 2.0}, {1: 1.0, "a": 2.0}),
    "tensor_vs_float": lambda T: T.testing.assert_close(T.tensor([1.]), 1.0),
    "tensor_vs_numpy": lambda T: T.testing.assert_close(T.tensor([1.]), np.array([1.])),
    "tensor_vs_list": lambda T: T.testing.assert_close(T.tensor([1.]), [1.0]),
    "strings": lambda T: T.testing.assert_close("a", "b"),
    "none_pair": lambda T: T.testing.assert_close(None, 1),
    "none_none": lambda T: T.testing.assert_close(None, None),
    "bools": lambda T: T.testing.assert_close(True, False),
    "numpy_bools": lambda T: T.testing.assert_close(np.bool_(True), False),
    "ints": lambda T: T.testing.assert_close(1, 2),
    "int_vs_float": lambda T: T.testing.assert_close(1, 1.0),
    "int_vs_float_unchecked": lambda T: T.testing.assert_close(1, 1.0, check_dtype=False),
    "floats": lambda T: T.testing.assert_close(1.0, 1.1),
    "floats_close": lambda T: T.testing.assert_close(1.0, 1.0 + 1e-8),
    "float_nan": lambda T: T.testing.assert_close(NAN, NAN),
    "float_nan_equal": lambda T: T.testing.assert_close(NAN, NAN, equal_nan=True),
    "float_expected_zero": lambda T: T.testing.assert_close(1e-3, 0.0),
    "complex_scalars": lambda T: T.testing.assert_close(1 + 1j, 1 + 2j),
    "numpy_scalars": lambda T: T.testing.assert_close(np.float32(1.0), np.float32(1.5)),
    "numpy_int_scalars": lambda T: T.testing.assert_close(np.int64(3), 3),
    "numpy_arrays": lambda T: T.testing.assert_close(np.array([1., 2.]), np.array([1., 3.])),
    "numpy_int_arrays": lambda T: T.testing.assert_close(np.array([1, 2], dtype=np.int32),
                                                         np.array([1, 2], dtype=np.int32)),
    "numpy_dtype_mismatch": lambda T: T.testing.assert_close(np.array([1.], dtype=np.float32), np.array([1.])),
    "subclass_allowed": lambda T: T.testing.assert_close(T.nn.Parameter(T.ones(2)), T.ones(2)),
    "subclass_refused": lambda T: T.testing.assert_close(T.nn.Parameter(T.ones(2)), T.ones(2),
                                                         allow_subclasses=False),
    "empty": lambda T: T.testing.assert_close(T.ones(0, 3), T.ones(0, 3)),
}


@pytest.mark.parametrize("case", list(CLOSE_CASES), ids=list(CLOSE_CASES))
def test_assert_close_matches_torch(case):
    torch_error = raised(lambda: CLOSE_CASES[case](torch))
    kiln_error = raised(lambda: CLOSE_CASES[case](kiln))
    if torch_error is None:
        assert kiln_error is None, f"kiln raised {type(kiln_error).__name__}: {kiln_error}"
        return
    assert kiln_error is not None, f"kiln did not raise; torch raised {type(torch_error).__name__}: {torch_error}"
    assert type(kiln_error) is type(torch_error), (kiln_error, torch_error)
    if isinstance(torch_error, RuntimeError):  # an unexpected error inside a pair: the type is the contract
        return
    assert str(kiln_error) == as_kiln_text(str(torch_error))


def test_assert_close_message_format():
    """The documented header, statistics and tolerances, character for character."""
    with pytest.raises(AssertionError) as info:
        assert_close(kiln.tensor([1., 2., 3.]), kiln.tensor([1., 2.1, 3.]))
    assert str(info.value) == ("Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
                               "Greatest absolute difference: 0.09999990463256836 at index (1,) (up to 1e-05 allowed)\n"
                               "Greatest relative difference: 0.04761900380253792 at index (1,) "
                               "(up to 1.3e-06 allowed)")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int64",
                                   "uint8", "bool"])
def test_default_tolerances(dtype):
    from kiln.testing._comparison import default_tolerances
    from torch.testing._comparison import default_tolerances as torch_default_tolerances

    assert default_tolerances(getattr(kiln, dtype)) == torch_default_tolerances(getattr(torch, dtype))


def test_default_tolerances_take_the_loosest():
    from kiln.testing._comparison import default_tolerances

    assert default_tolerances(kiln.float16, kiln.float64) == (0.001, 1e-5)
    with pytest.raises(TypeError, match="Expected a kiln.Tensor or a kiln.dtype"):
        default_tolerances(1.0)


@pytest.mark.parametrize("seed", range(4))
def test_assert_close_random_perturbations(seed):
    """Random near-miss tensors: the same verdict and message as torch."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((4, 5)).astype(np.float32)
    other = base.copy()
    other[rng.integers(0, 4, 3), rng.integers(0, 5, 3)] += rng.choice([1e-7, 1e-5, 1e-3], 3).astype(np.float32)
    torch_error = raised(lambda: torch.testing.assert_close(torch.tensor(base), torch.tensor(other)))
    kiln_error = raised(lambda: assert_close(kiln.tensor(base), kiln.tensor(other)))
    assert (torch_error is None) == (kiln_error is None)
    if torch_error is not None:
        assert str(kiln_error) == str(torch_error)


def test_assert_close_noncontiguous_and_complex_views():
    a = make_tensor(3, 4, dtype=kiln.complex64, device="cpu", noncontiguous=True)
    assert_close(a, a.clone())
    b = a.clone()
    kiln.view_as_real(b)[1, 2, 1] += 1.0
    with pytest.raises(AssertionError, match=r"Mismatched elements: 1 / 12 \(8.3%\)\nGreatest absolute difference: "
                                             r".* at index \(1, 2\)"):
        assert_close(a, b)


def test_assert_allclose_deprecated_and_loose():
    for module in (kiln, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module.testing.assert_allclose(module.tensor([1., NAN]), [1.00005, NAN])  # float32: rtol 1e-4
        assert caught and caught[0].category is FutureWarning
    kiln_text = str(caught_text(kiln))
    assert kiln_text == as_kiln_text(str(caught_text(torch))).replace("pykiln/pykiln", "pytorch/pytorch")
    for case in (lambda T: T.testing.assert_allclose(T.tensor([1., 2.]), [1.01, 2.]),
                 lambda T: T.testing.assert_allclose([1, 2], [1, 3]),
                 lambda T: T.testing.assert_allclose(T.tensor([1.], dtype=T.float64), 1.00002),
                 lambda T: T.testing.assert_allclose(T.tensor([1.]), T.tensor([3.]), msg="nope")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            torch_error, kiln_error = raised(lambda: case(torch)), raised(lambda: case(kiln))
        assert torch_error is not None and type(kiln_error) is type(torch_error)
        assert str(kiln_error) == as_kiln_text(str(torch_error))


def caught_text(module):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module.testing.assert_allclose(module.tensor([1.]), module.tensor([1.]))
    return caught[0].message


# --- make_tensor ---------------------------------------------------------------------------------

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64",
          "complex128"]
DEFAULT_RANGES = {"bool": (0, 1), "uint8": (0, 9)}


def real_values(t):
    if t.dtype.is_complex:
        t = kiln.view_as_real(t)
    if t.dtype is kiln.bfloat16:
        t = t.float()
    return t.numpy().astype(np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_make_tensor_default_ranges(dtype):
    kiln.manual_seed(0)
    t = make_tensor((4000,), dtype=getattr(kiln, dtype), device="cpu")
    assert t.dtype is getattr(kiln, dtype) and tuple(t.shape) == (4000,) and t.is_contiguous()
    values = real_values(t)
    if dtype == "bool" or "int" in dtype:
        lo, hi = DEFAULT_RANGES.get(dtype, (-9, 9))
        assert set(np.unique(values)) == set(range(lo, hi + 1))  # every value in range drawn, none outside
    else:
        assert values.min() >= -9 and values.max() < 9
        assert values.min() < -8.5 and values.max() > 8.5  # uniform over the whole range
        assert abs(values.mean()) < 0.5


@pytest.mark.parametrize("dtype,low,high", [("int8", -1000, 1000), ("uint8", -5, 3), ("int32", 1.2, 3.5),
                                            ("int64", -2**70, 2**70), ("float16", -1e6, 1e6),
                                            ("float32", -1e40, 1e40), ("float64", 0.25, 0.5), ("complex64", -1, 1),
                                            ("bool", -3, 3)])
def test_make_tensor_bounds_clamped(dtype, low, high):
    k_dtype = getattr(kiln, dtype)
    t = make_tensor((500,), dtype=k_dtype, device="cpu", low=low, high=high)
    values = real_values(t)
    info = kiln.iinfo(k_dtype) if dtype != "bool" and "int" in dtype else None
    if dtype == "bool":
        assert set(np.unique(values)) <= {0, 1}
    elif info is not None:
        lo, hi = max(math.ceil(low), info.min), min(math.ceil(high), info.max + 1)
        assert values.min() >= lo and values.max() < hi
    else:
        finfo = kiln.finfo(kiln.float32 if dtype == "complex64" else k_dtype)
        assert values.min() >= max(low, finfo.min) and values.max() <= min(high, finfo.max)


def test_make_tensor_shapes_and_layouts():
    assert tuple(make_tensor(2, 3, dtype=kiln.float32, device="cpu").shape) == (2, 3)
    assert tuple(make_tensor([2, 3], dtype=kiln.float32, device="cpu").shape) == (2, 3)
    assert tuple(make_tensor(kiln.Size([4]), dtype=kiln.int32, device="cpu").shape) == (4,)
    assert tuple(make_tensor((), dtype=kiln.float32, device="cpu").shape) == ()
    for shape in [(3, 4), (2, 3, 5), (1, 2)]:
        k = make_tensor(shape, dtype=kiln.float32, device="cpu", noncontiguous=True)
        t = torch.testing.make_tensor(shape, dtype=torch.float32, device="cpu", noncontiguous=True)
        assert tuple(k.shape) == tuple(t.shape) and k.stride() == t.stride()
        assert k.storage_offset() == t.storage_offset() == 1 and not k.is_contiguous()
    one = make_tensor((1,), dtype=kiln.float32, device="cpu", noncontiguous=True)  # fewer than two elements
    assert one.is_contiguous()
    k = make_tensor((2, 3, 4, 5), dtype=kiln.float32, device="cpu", memory_format=kiln.channels_last)
    t = torch.testing.make_tensor((2, 3, 4, 5), dtype=torch.float32, device="cpu", memory_format=torch.channels_last)
    assert k.stride() == t.stride()


def test_make_tensor_exclude_zero():
    for dtype in ("int8", "uint8", "bool"):
        t = make_tensor((200,), dtype=getattr(kiln, dtype), device="cpu", low=0, high=1, exclude_zero=True)
        assert bool((t == 1).all())
    zero_heavy = make_tensor((200,), dtype=kiln.float32, device="cpu", low=0, high=1e-44, exclude_zero=True)
    assert bool((zero_heavy != 0).all())
    assert bool((zero_heavy == kiln.finfo(kiln.float32).tiny).any())  # draws that rounded to zero became tiny
    c = make_tensor((200,), dtype=kiln.complex64, device="cpu", low=0, high=1e-44, exclude_zero=True)
    parts = kiln.view_as_real(c)
    assert not bool(((parts[:, 0] == 0).logical_and(parts[:, 1] == 0)).any())
    replaced = (parts[:, 0] == kiln.finfo(kiln.float32).tiny)
    assert bool(replaced.any())


def test_make_tensor_requires_grad():
    t = make_tensor((3,), dtype=kiln.float32, device="cpu", requires_grad=True)
    assert t.requires_grad and t.is_leaf
    assert not make_tensor((3,), dtype=kiln.float64, device="cpu").requires_grad
    nc = make_tensor((3, 4), dtype=kiln.float32, device="cpu", requires_grad=True, noncontiguous=True)
    assert nc.requires_grad and nc.is_leaf == torch.testing.make_tensor(
        (3, 4), dtype=torch.float32, device="cpu", requires_grad=True, noncontiguous=True).is_leaf


MAKE_ERRORS = [
    dict(shape=(3,), dtype="int32", requires_grad=True),
    dict(shape=(3,), dtype="bool", requires_grad=True),
    dict(shape=(3,), dtype="float32", low=2, high=1),
    dict(shape=(3,), dtype="int64", low=5, high=5),
    dict(shape=(3,), dtype="float32", low=NAN),
    dict(shape=(3,), dtype="int8", low=200, high=300),
    dict(shape=(3,), dtype="uint8", low=-10, high=-1),
    dict(shape=(3,), dtype="float16", low=7e4, high=8e4),
    dict(shape=(2, 2), dtype="float32", noncontiguous=True, memory_format="contiguous_format"),
]


@pytest.mark.parametrize("case", MAKE_ERRORS, ids=[str(i) for i in range(len(MAKE_ERRORS))])
def test_make_tensor_errors(case):
    def call(T):
        kwargs = dict(case)
        shape, dtype = kwargs.pop("shape"), getattr(T, kwargs.pop("dtype"))
        if "memory_format" in kwargs:
            kwargs["memory_format"] = getattr(T, kwargs["memory_format"])
        return T.testing.make_tensor(shape, dtype=dtype, device="cpu", **kwargs)

    torch_error, kiln_error = raised(lambda: call(torch)), raised(lambda: call(kiln))
    assert torch_error is not None and type(kiln_error) is type(torch_error)
    assert str(kiln_error) == as_kiln_text(str(torch_error))


def test_make_tensor_unsupported_dtype():
    with pytest.raises(TypeError, match=r"^The requested dtype 'float32' is not supported by "
                                        r"kiln.testing.make_tensor\(\)"):
        make_tensor((2,), dtype="float32", device="cpu")
    with pytest.raises(TypeError, match="The requested dtype 'float32' is not supported by torch.testing"):
        torch.testing.make_tensor((2,), dtype="float32", device="cpu")


def test_make_tensor_low_equals_high_warns():
    for module in (kiln, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = module.testing.make_tensor((4,), dtype=module.float32, device="cpu", low=2, high=2)
        assert caught[0].category is FutureWarning
        assert caught[0].filename == __file__  # reported at the caller
        assert t.tolist() == [2.0] * 4
        if module is kiln:
            kiln_text = str(caught[0].message)
    assert kiln_text == as_kiln_text(str(caught[0].message))


def test_make_tensor_is_picklable_and_comparable():
    t = make_tensor((3, 3), dtype=kiln.float64, device="cpu")
    assert_close(pickle.loads(pickle.dumps(t)), t)
