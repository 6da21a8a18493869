"""cumsum / cumprod with out= (Note [Out= dtype rules], eager/kernels/cpu/OutFromFunctional.h):
every input dtype x dtype= (none or each) x out dtype against torch: the
values and out's dtype where torch computes, the exception type and message
where it refuses (bool outs and dtype=bool have no loop, dtype= must equal
out's dtype); plus out resizing, a strided out, 0-dim input and wrapping
integer outs."""

import itertools
import warnings

import numpy as np
import pytest
import torch

import kiln
from tolerances import tolerance

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def make(lib, name):
    values = {"bool": [[True, False, True], [True, True, False]], "uint8": [[1, 0, 2], [3, 250, 1]]}
    return lib.tensor(values.get(name, [[1, 0, 2], [3, -1, 1]]), dtype=getattr(lib, name))


def outcome(lib, op, x_dtype, dtype, out_dtype):
    x = make(lib, x_dtype)
    out = lib.empty((2, 3), dtype=getattr(lib, out_dtype))
    kwargs = {} if dtype is None else {"dtype": getattr(lib, dtype)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = getattr(lib, op)(x, 1, out=out, **kwargs)
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        return ("error", type(error).__name__, str(error).splitlines()[0])
    assert result is out
    return ("ok", str(out.dtype).split(".")[-1], [float(v) for v in out.flatten().tolist()])


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("x_dtype", DTYPES)
def test_every_dtype_combination_matches_torch(op, x_dtype):
    mismatches = []
    for dtype, out_dtype in itertools.product([None] + DTYPES, DTYPES):
        k = outcome(kiln, op, x_dtype, dtype, out_dtype)
        t = outcome(torch, op, x_dtype, dtype, out_dtype)
        same = k[:2] == t[:2] and (k[0] == "error" and k[2] == t[2] or
                                   k[0] == "ok" and np.allclose(k[2], t[2], **tolerance(out_dtype, op), equal_nan=True))
        if not same:
            mismatches.append((dtype, out_dtype, k, t))
    assert not mismatches, mismatches[:5]


def test_bool_out_and_dtype_bool_are_not_implemented():
    for lib in (kiln, torch):
        for x, kwargs in ((lib.tensor([1, 2]), {}), (lib.tensor([True, False]), {}),
                          (lib.tensor([1, 2]), {"dtype": lib.bool})):
            with pytest.raises(NotImplementedError, match="\"cumsum_out_cpu\" not implemented for 'Bool'"):
                lib.cumsum(x, 0, out=lib.empty(2, dtype=lib.bool), **kwargs)


def test_integer_input_into_float_out_and_float_into_int_out():
    for lib in (kiln, torch):
        out = lib.empty(3, dtype=lib.float32)
        lib.cumsum(lib.tensor([1, 2, 3]), 0, out=out)
        assert out.tolist() == [1.0, 3.0, 6.0]
        iout = lib.empty(2, dtype=lib.int32)
        lib.cumsum(lib.tensor([1.5, 2.7]), 0, out=iout)  # computed in int32: the inputs truncate first
        assert iout.tolist() == [1, 3]


def test_out_resize_strided_zero_dim_and_wrapping():
    for lib in (kiln, torch):
        out = lib.empty(0)
        lib.cumsum(lib.ones(2, 3), 1, out=out)
        assert tuple(out.shape) == (2, 3) and out.tolist() == [[1, 2, 3], [1, 2, 3]]
        strided = lib.empty(2, 3).t()
        lib.cumsum(lib.ones(3, 2), 0, out=strided)
        assert strided.tolist() == [[1, 1], [2, 2], [3, 3]]
        zero_dim = lib.empty((), dtype=lib.int32)
        lib.cumprod(lib.tensor(3), 0, out=zero_dim)
        assert zero_dim.tolist() == 3
        wrapped = lib.empty(2, dtype=lib.uint8)
        lib.cumsum(lib.tensor([200, 100], dtype=lib.uint8), 0, out=wrapped)
        assert wrapped.tolist() == [200, 44]


def test_errors_match_torch():
    for lib in (kiln, torch):
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got double instead"):
            lib.cumsum(lib.tensor([1, 2]), 0, dtype=lib.float32, out=lib.empty(2, dtype=lib.float64))
        with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"):
            lib.cumsum(lib.tensor([1.0, 2.0]), 1, out=lib.empty(2))
