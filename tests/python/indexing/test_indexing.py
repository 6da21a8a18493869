"""x[index] and x[index] = value against torch.

Each case is one Python expression (or statement), evaluated on a torch tensor and
a kiln tensor holding the same data, with the same names bound to each library
(T = tensor, V = a value tensor of x's dtype, M2 = a (3, 4) mask, ...). Results
must agree in shape, dtype, strides and values, or both sides must raise the same
exception type with torch's text (read "torch" as "kiln"). Basic indexing must
return views of x and advanced indexing copies; a failed assignment must leave
x exactly as it was.
"""

import numpy as np
import pytest
import torch

import kiln
from torch_compare import DTYPE_NAMES, assert_same_tensor, as_kiln_text, raised, values

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SHAPE = (3, 4, 5)


def base_values(shape, dtype_name):
    n = int(np.prod(shape))
    a = np.arange(n).reshape(shape)
    if dtype_name == "bool":
        return a % 3 == 0
    if dtype_name in ("float32", "float64", "float16", "bfloat16"):
        return (a * 0.5 - 7).astype(np.float32)
    if dtype_name == "uint8":
        return a.astype(np.uint8)
    return (a - n // 2).astype(np.int64)


def make_x(mod, dtype_name, layout="contiguous"):
    """x of shape (3, 4, 5) in `layout`: contiguous, transposed, strided (a slice of a
    bigger tensor) or expanded (stride 0 along dim 0)."""
    dtype = getattr(mod, dtype_name)
    if layout == "contiguous":
        return mod.tensor(base_values(SHAPE, dtype_name), dtype=dtype)
    if layout == "transposed":
        return mod.tensor(base_values((5, 4, 3), dtype_name), dtype=dtype).transpose(0, 2)
    if layout == "strided":
        return mod.tensor(base_values((6, 4, 10), dtype_name), dtype=dtype)[::2, :, 1::2]
    if layout == "expanded":
        row = mod.tensor(base_values((1, 4, 5), dtype_name), dtype=dtype)
        return row.as_strided(SHAPE, (0, 5, 1))
    raise ValueError(layout)


def names(mod, x):
    """The names an expression may use, bound to `mod`'s objects."""
    def V(data):  # a value tensor of x's dtype
        return mod.tensor(data, dtype=x.dtype)

    return {
        "x": x, "T": mod.tensor, "V": V, "np": np,
        "long": mod.long, "int32": mod.int32, "int16": mod.int16, "uint8": mod.uint8, "bool_": mod.bool,
        "float32": mod.float32, "float64": mod.float64,
        "M1": mod.tensor([True, False, True]),
        "M1b": mod.tensor([False, True, True, False]),
        "M1c": mod.tensor([True, False, False, True, True]),
        "M2": mod.tensor([[True, False, True, False], [False, False, True, True], [True, True, False, False]]),
        "M3": mod.tensor(np.arange(60).reshape(SHAPE) % 4 == 1),
        "MNONE": mod.tensor(np.zeros((3, 4), dtype=bool)),
        "MU8": mod.tensor([1, 0, 1], dtype=mod.uint8),
    }


# --- x[index] ------------------------------------------------------------------------

# Basic indexing: every result is a view of x.
BASIC = [
    "x[0]", "x[-1]", "x[2, 3]", "x[1, -1, 4]", "x[-3, -4, -5]", "x[:]", "x[1:]", "x[:-1]", "x[::2]",
    "x[1::2, ::3]", "x[:, 1:3, 2:]", "x[-2:, :, -1]", "x[10:20]", "x[2:1]", "x[-10:10]", "x[0:3]", "x[:, 0:4]",
    "x[None]", "x[:, None]", "x[..., None]", "x[None, ..., None]", "x[None, None, 1]", "x[...]", "x[..., 0]",
    "x[0, ...]", "x[0, ..., 1]", "x[..., 1:, 2]", "x[:, :, :]", "x[(1,)]", "x[()]", "x[(None,)]",
    "x[T(1)]", "x[:, T(-1)]", "x[T(2, dtype=int32)]", "x[T(1), T(2), T(3)]", "x[np.int64(1)]",
    "x[np.int32(2), np.int64(-1)]", "x[-2**70:2**70]", "x[:2**64]", "x[1][None][:, 2:]", "x[1, ...][...][None]",
    "x[None, 0, None, 1]", "x[1:2, None, 3]", "x[T(1):T(3)]", "x[0][0][0]", "x[[T(0), T(1)]]",
]

# Advanced indexing: every result is a new tensor.
ADVANCED = [
    # integer lists and tensors; adjacent indices keep their place, separated ones go first
    "x[[0, 2]]", "x[[-1, 0, -1]]", "x[T([[0, 1], [2, 0]])]", "x[:, [1, 3]]", "x[..., [0, 4]]", "x[[0, 1], [1, 2]]",
    "x[[0, 1], :, [1, 2]]", "x[:, [0, 1], [1, 2]]", "x[[0], :, [1, 2]]", "x[1, [0, 1], [1, 2]]",
    "x[[0, 1], 1, [1, 2]]", "x[None, [0, 1], None, [1, 2]]", "x[[0, 1], None, [1, 2]]", "x[[0, 1], None]",
    "x[T([0, 1])[:, None], T([1, 2])]", "x[T([[0], [2]]), :, T([1, 3, 4])]", "x[[[0], [1]], [[1, 2]]]",
    "x[T([[1, 0], [0, 1]]), :, T([[0], [1]])]", "x[..., None, T([0, 1])]", "x[[0, 1], ..., [1, 2]]",
    "x[1:, [0, 3]]", "x[::2, [0, 3], 1:4]", "x[T([0, 2], dtype=int32)]", "x[:, T([3, 0], dtype=int32), [1]]",
    "x[np.array([0, 2])]", "x[[np.int64(0)]]", "x[[T([0, 1])]]", "x[(T([0, 1]),)]",
    "x[T([0, 1])[None]]", "x[[[0, 1]]]", "x[[0.5, 1.7]]", "x[0, [1, 2], 3]", "x[[2, 0], 3, [4, 0]]",
    "x[[1], [2], [3]]", "x[[[0, 1]], [[1], [2]], 0]", "x[T([], dtype=long)]", "x[[]]", "x[:, []]", "x[[[]]]",
    # masks: a k-dim mask stands for k dims
    "x[M1]", "x[M2]", "x[M3]", "x[:, M1b]", "x[..., M1c]", "x[0, M1b]", "x[M2, 1]", "x[M2, None]", "x[M2, 1:3]",
    "x[M2, None, 1]", "x[M1, :, [0, 1]]", "x[M1, [1, 2]]", "x[None, M2]", "x[M2, ...]", "x[..., M1b, :]",
    "x[:, M1b, 1]", "x[MNONE]", "x[MU8]", "x[[True, False, True]]", "x[np.array([True, False, True])]",
    "x[[[True, False, True]]]", "x[T(True), M2]", "x[T([0, 1]), M1b]", "x[[0], M1b]",
    # bools: a lone bool is a size-1 dim (True) or an empty one (False)
    "x[True]", "x[False]", "x[:, True]", "x[0, False]", "x[None, True]", "x[T(True)]", "x[T(False)]",
    "x[T(1, dtype=uint8)]", "x[True, False]", "x[True, [0, 1]]", "x[T([0, 1]), True]", "x[[0], False]",
]

# Expressions that raise in torch: kiln must raise the same exception with the same text.
GETITEM_ERRORS = [
    "x[3]", "x[-4]", "x[0, 4]", "x[1, -5]", "x[None, 3]", "x[:, 7]", "x[0, 0, 0, 0]", "x[..., 0, 0, 0, 0]",
    "x[1.5]", "x[0, 1.5]", "x['a']", "x[{}]", "x[object()]", "x[::-1]", "x[::0]", "x[:, ::-2]", "x[2**70]",
    "x[[0, 3]]", "x[:, [4]]", "x[[0, 1], [0, 9]]", "x[[0, 1], :, [0, 5]]", "x[[5], [0]]", "x[T([-4])]",
    "x[[0, 1], [0, 1, 2]]", "x[[[0, 1]], [0, 1, 2]]", "x[[1], [2], [3], [0]]", "x[T([0.])]", "x[T(1.)]",
    "x[T([0, 1], dtype=int16)]", "x[T([])]", "x[T([1.5])]", "x[['a']]", "x[T([True, False])]",
    "x[:, T([True, False, True])]", "x[M1b]", "x[T([True])]", "x[M2, M2]", "x[T(np.ones((3, 4, 5, 1), bool))]",
    "x[M1, 7]", "x[1:, M2]", "x[M1c]", "x[np.bool_(True)]", "x[[0, 1], False]",
]

LAYOUTS = ["contiguous", "transposed", "strided", "expanded"]


def assert_same_result(k, t, *, check_stride=True):
    """assert_same_tensor, with strides compared only where they mean something: along dims
    of size > 1 of a non-empty result (kiln's TensorIterator gives size-1 dims of a new
    tensor other strides than torch's; no element is ever reached through them)."""
    assert_same_tensor(k, t, check_stride=False)
    if check_stride and t.numel() > 0:
        kept = [i for i, n in enumerate(t.shape) if n > 1]
        assert [k.stride()[i] for i in kept] == [t.stride()[i] for i in kept], (k.stride(), t.stride())


def run_both(expr, dtype_name="float32", layout="contiguous"):
    kx, tx = make_x(kiln, dtype_name, layout), make_x(torch, dtype_name, layout)
    return kx, tx, (lambda: eval(expr, names(kiln, kx))), (lambda: eval(expr, names(torch, tx)))


def assert_same_error_text(kiln_error, torch_error):
    assert kiln_error is not None, f"kiln did not raise; torch raised {type(torch_error).__name__}: {torch_error}"
    assert isinstance(kiln_error, type(torch_error)), (
        f"kiln raised {type(kiln_error).__name__}: {kiln_error}; torch raised {type(torch_error).__name__}: "
        f"{torch_error}")
    assert str(kiln_error) == as_kiln_text(str(torch_error))


def shares_memory(a, b):
    """Whether a's elements lie in b's storage (kiln or torch), by a write through a."""
    if a.numel() == 0:
        return None
    before = values(b).copy()
    a.numpy()[...] = np.logical_not(a.numpy()) if a.dtype in (kiln.bool, torch.bool) else a.numpy() + 1
    changed = not np.array_equal(values(b), before, equal_nan=True)
    return changed


# A lone bool index: torch copies (it goes through advanced indexing); kiln returns the view
# with the same shape and values (Note [A lone bool index is a view], TensorIndexing.cpp), so
# its strides are x's, which are torch's copy's only when x is contiguous.
LONE_BOOLS = {"x[True]", "x[False]", "x[:, True]", "x[0, False]", "x[None, True]", "x[T(True)]", "x[T(False)]",
              "x[T(1, dtype=uint8)]"}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("expr", BASIC + ADVANCED)
def test_getitem_layouts(expr, layout):
    kx, tx, k, t = run_both(expr, "float32", layout)
    assert raised(t) is None, "the case is meant to succeed"
    assert_same_result(k(), t(), check_stride=expr not in LONE_BOOLS or layout == "contiguous")


@pytest.mark.parametrize("dtype_name", [d for d in DTYPE_NAMES if d != "float32"])
@pytest.mark.parametrize("expr", BASIC + ADVANCED)
def test_getitem_dtypes(expr, dtype_name):
    kx, tx, k, t = run_both(expr, dtype_name)
    assert_same_result(k(), t())


@pytest.mark.parametrize("expr", BASIC)
def test_basic_indexing_returns_views(expr):
    kx = make_x(kiln, "float32")
    result = eval(expr, names(kiln, kx))
    assert result.data_ptr() >= kx.data_ptr() or result.numel() == 0
    assert shares_memory(result, kx) in (True, None)
    assert result is not kx


@pytest.mark.parametrize("expr", [e for e in ADVANCED if e not in LONE_BOOLS])
def test_advanced_indexing_copies(expr):
    kx = make_x(kiln, "float32")
    before = kx.tolist()
    result = eval(expr, names(kiln, kx))
    if result.numel() > 0:
        assert shares_memory(result, kx) is False
    assert kx.tolist() == before


@pytest.mark.parametrize("expr", GETITEM_ERRORS)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_getitem_errors(expr, layout):
    kx, tx, k, t = run_both(expr, "float32", layout)
    torch_error = raised(t)
    assert torch_error is not None, "the torch side did not raise: the case is wrong"
    assert_same_error_text(raised(k), torch_error)


# 0-dim and zero-size tensors.
ZERO_DIM = ["z[...]", "z[None]", "z[True]", "z[False]", "z[None, None]", "z[..., None]", "z[True, None]",
            "z[T(True)]", "z[T(False)]", "z[0]", "z[5]", "z[-1]", "z[:]", "z[0,]", "z[:,]", "z[None, 0]", "z[[0]]",
            "z[T([0])]", "z[T([True])]", "z[[True]]", "z[..., 0]", "z[1.5]"]
EMPTY = ["e[0]", "e[:, 1]", "e[1:]", "e[[]]", "e[T([], dtype=long)]", "e[:, [0, 2]]", "e[[0]]", "e[:, [3]]",
         "e[..., None]", "e[T(np.zeros((0, 3), bool))]", "e[T(np.zeros(3, bool))]", "e[:, T([True, False, True])]",
         "e[True]", "e[False, [0]]"]


@pytest.mark.parametrize("expr", ZERO_DIM + EMPTY)
def test_getitem_zero_dim_and_empty(expr):
    def env(mod):
        return {"z": mod.tensor(5.0), "e": mod.zeros(0, 3), "T": mod.tensor, "long": mod.long, "np": np}

    t_fn, k_fn = (lambda: eval(expr, env(torch))), (lambda: eval(expr, env(kiln)))
    torch_error = raised(t_fn)
    if torch_error is not None:
        assert_same_error_text(raised(k_fn), torch_error)
        return
    assert_same_result(k_fn(), t_fn())


def test_len():
    assert len(make_x(kiln, "float32")) == 3
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(kiln.tensor(1.0))
    assert len(kiln.zeros(0, 2)) == 0


# --- x[index] = value ----------------------------------------------------------------------

SETITEM = [
    # basic indexing: value broadcast, any dtype converted
    "x[0] = 1", "x[0] = 2.5", "x[0] = True", "x[1, 2] = V([1, 2, 3, 4, 5])", "x[1] = V([[1] * 5] * 4)",
    "x[:, 1] = V(7)", "x[...] = 3", "x[None] = V(np.ones((1, 3, 4, 5)))", "x[True] = 4", "x[False] = 4",
    "x[0] = V([[[1, 2, 3, 4, 5]]])", "x[:, :, 0] = T([1, 2, 3, 4])", "x[1:, ::2] = T([[1.5], [2.5], [3.5]])",
    "x[0] = T(np.arange(20).reshape(4, 5), dtype=float64)", "x[0, 0, 0] = T(-3)", "x[-1] = T([9.75])",
    "x[0] = np.float64(1.25)", "x[np.int64(1)] = 5", "x[T(1)] = 6", "x[1, T(2)] = 6", "x[(0, slice(1, 3))] = 8",
    "x[0] = V([1, 2])", "x[0] = V([[1], [2]])", "x[:, None, 1] = V([9, 8, 7])", "x[0] = 'a'", "x[0] = None",
    "x[0] = [1, 2]", "x[0] = {}", "del x[0]", "x[3] = 1", "x[0, 4] = 1", "x[::-1] = 1", "x[1.5] = 1",
    # advanced indexing: values broadcast to the indexed shape
    "x[[0, 2]] = 5", "x[[0, 2]] = 2.5", "x[[0, 2]] = V([1, 2, 3, 4, 5])", "x[[0, 2]] = V([[1], [2], [3], [4]])",
    "x[:, [1, 3]] = V(np.arange(30).reshape(3, 2, 5))", "x[[0, 1], :, [1, 2]] = V(np.arange(8).reshape(2, 4))",
    "x[[0, 1], [1, 2]] = V([[1, 2, 3, 4, 5]])", "x[T([[0], [2]]), :, T([1, 3, 4])] = V(np.arange(24).reshape(2, 3, 4))",
    "x[M2] = 0", "x[M2] = V(9)", "x[M2] = V([9])", "x[M2] = V(np.arange(30).reshape(6, 5))", "x[M3] = -1",
    "x[:, M1b] = V([[1], [2], [3]])", "x[M1, 1:3] = 5", "x[MNONE] = 5", "x[MU8] = 3",
    "x[M2] = T(5)", "x[M2] = T(2.5)", "x[M2] = T([300])", "x[[0, 2]] = V([[[1]]])", "x[T([0, 1], dtype=int32)] = 2",
    "x[[0, 1], 1, [1, 2]] = V([7, 8])", "x[[[True, False, True]]] = 1", "x[True, [0, 1]] = 4", "x[[0, 1], False] = 4",
    "x[[]] = 5", "x[[]] = V([1, 2, 3, 4, 5])", "x[1, [0, 3]] = V([[1], [2]])",
    # errors
    "x[[0, 3]] = 1", "x[:, [4]] = 1", "x[[0, 1]] = V([1, 2])", "x[[0, 1], [0, 1]] = V([1, 2, 3])",
    "x[[0, 1]] = T(np.ones((2, 4, 5), dtype=np.float64))", "x[[0, 1]] = T([1, 2, 3, 4, 5], dtype=long)",
    "x[M2] = V([1, 2])", "x[T([True, False])] = 1", "x[[0, 1], [0, 1, 2]] = 1", "x[T([0.])] = 1",
    "x[[0, 1]] = 'a'", "x[M2] = V(np.ones((7, 5)))", "x[[0, 2]] = V(np.ones((1, 1, 1, 5, 1)))",
]

SETITEM_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool"]
SETITEM_DTYPE_CASES = [
    "x[0] = 1", "x[0] = 2.5", "x[0] = -1", "x[0] = 300", "x[[0, 2]] = 1", "x[[0, 2]] = 2.5", "x[M2] = 0",
    "x[M2] = 300", "x[M2] = T(2.5)", "x[:, [1, 3]] = V(np.arange(30).reshape(3, 2, 5) % 2)", "x[0] = float('nan')",
    "x[0] = float('inf')", "x[[0, 1]] = T(1)", "x[0] = T(300)", "x[0:2] = T(300)", "x[0] = V([1, 0, 1, 0, 1])",
]


def run_statement(stmt, dtype_name, layout="contiguous"):
    kx, tx = make_x(kiln, dtype_name, layout), make_x(torch, dtype_name, layout)
    k_env, t_env = names(kiln, kx), names(torch, tx)
    k_before = values(kx).copy()
    torch_error = raised(lambda: exec(stmt, t_env))
    kiln_error = raised(lambda: exec(stmt, k_env))
    if torch_error is not None:
        assert_same_error_text(kiln_error, torch_error)
        # torch may have written part of x before its loop met the bad index; kiln checks first.
        assert np.array_equal(values(kx), k_before, equal_nan=True), "a failed assignment wrote into x"
        return
    assert kiln_error is None, f"kiln raised {type(kiln_error).__name__}: {kiln_error}"
    assert_same_result(kx, tx)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("stmt", SETITEM)
def test_setitem(stmt, layout):
    run_statement(stmt, "float32", layout)


@pytest.mark.parametrize("dtype_name", SETITEM_DTYPES)
@pytest.mark.parametrize("stmt", SETITEM_DTYPE_CASES)
def test_setitem_dtypes(stmt, dtype_name):
    run_statement(stmt, dtype_name)


def test_setitem_writes_through_views():
    k = kiln.zeros(3, 4)
    row = k[1]
    row[[0, 2]] = 5.0
    k[:, 3] = kiln.tensor([1.0, 2.0, 3.0])
    assert k.tolist() == [[0, 0, 0, 1], [5, 0, 5, 2], [0, 0, 0, 3]]


def test_setitem_bumps_version():
    k = kiln.zeros(3, 4)
    v0 = k._version
    k[[0, 1]] = 1.0
    assert k._version > v0
    v1 = k._version
    k[0] = 2.0
    assert k._version > v1


def test_setitem_value_aliasing_self_raises_as_torch():
    def case(mod):
        x = mod.arange(12.0).view(3, 4)
        x[[0, 1]] = x[2]

    assert_same_error_text(raised(lambda: case(kiln)), raised(lambda: case(torch)))


# --- nothing is written when an index is out of range ------------------------------------------

# Each statement has valid indices first and one bad index last: the bad one must be found
# before any element is written, for every op that writes.
NO_PARTIAL_WRITES = [
    "x[[0, 1, 2, 3]] = 9", "x[[0, 1, 2], [0, 1, 7]] = 9", "x[T([0, 1, 2]), :, T([0, 1, -6])] = V(1)",
    "x.index_put_((T([0, 1, 2, 0, 3]),), V(1), accumulate=True)",
    "x.index_put_((T([0, 0, 1]), T([1, 1, 4])), V([1, 2, 3]), accumulate=True)",
    "x.scatter_(0, T(np.array([[[0, 1, 2, 5]]])), V(7))",
    "x.scatter_(2, T(np.array([[[0, 1, 2, 5]]])), 7.0)",
    "x.scatter_add_(1, T(np.array([[[0], [1], [4]]])), V(np.ones((1, 3, 1))))",
    "x.scatter_(0, T(np.array([[[0, 9]]])), V(np.ones((1, 1, 2))), reduce='multiply')",
    "x.index_add_(0, T([0, 2, 3]), V(np.ones((3, 4, 5))))", "x.index_add_(2, T([0, 1, -1]), V(np.ones((3, 4, 3))))",
    "x.index_fill_(1, T([0, 1, 4]), 0.5)", "x.index_fill_(2, T([0, -6]), V(2))",
    "x.masked_scatter_(M3, V(np.arange(3)))",
]


@pytest.mark.parametrize("dtype_name", ["float32", "int64"])
@pytest.mark.parametrize("stmt", NO_PARTIAL_WRITES)
def test_out_of_range_writes_nothing(stmt, dtype_name):
    kx = make_x(kiln, dtype_name)
    before = values(kx).copy()
    version = kx._version
    error = raised(lambda: exec(stmt, names(kiln, kx)))
    assert isinstance(error, (IndexError, RuntimeError)), error
    assert np.array_equal(values(kx), before)
    assert kx._version == version
    # torch raises the same exception type (its text is compared in the op tests).
    tx = make_x(torch, dtype_name)
    torch_error = raised(lambda: exec(stmt, names(torch, tx)))
    assert isinstance(error, type(torch_error)), (error, torch_error)


def test_out_of_range_message_names_index_and_size():
    x = kiln.zeros(3)
    with pytest.raises(IndexError, match="^index 5 is out of bounds for dimension 0 with size 3$"):
        x[[0, 5]] = 1.0
    assert x.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(IndexError, match="^index 5 is out of bounds for dimension 0 with size 3$"):
        x[5]


# --- accumulate=True with repeated indices ------------------------------------------------------

ACCUMULATE = [
    ("index_put_", "x.index_put_((T([0, 0, 2, 0]),), V(np.arange(20).reshape(4, 5)), accumulate=True)"),
    ("index_put_2d", "x.index_put_((T([1, 1, 1]), T([2, 2, 3])), V([[1], [2], [3]]), accumulate=True)"),
    ("index_put_broadcast", "x.index_put_((T([0, 0]),), V(1), accumulate=True)"),
    ("index_put_mask", "x.index_put_((M2,), V(2), accumulate=True)"),
    ("index_put_functional", "x = torch_or_kiln.index_put(x, (T([2, 2]), T([3, 3])), V(5), True)"),
    ("index_add", "x.index_add_(1, T([3, 3, 0]), V(np.ones((3, 3, 5))), alpha=2)"),
    ("scatter_add", "x.scatter_add_(0, T(np.array([[[0, 0, 1, 0, 0]] * 4] * 2)), V(np.ones((2, 4, 5))))"),
    ("scatter_reduce_add", "x.scatter_(2, T(np.array([[[1, 1, 1]]])), V(np.ones((1, 1, 3))), reduce='add')"),
    ("scatter_multiply", "x.scatter_(1, T(np.array([[[0, 1]], [[0, 0]]])), V(np.full((2, 1, 2), 2)), reduce='multiply')"),
]


@pytest.mark.parametrize("dtype_name", ["float32", "float64", "int64", "int32", "int8", "uint8", "float16", "bfloat16"])
@pytest.mark.parametrize("stmt", [s for _, s in ACCUMULATE], ids=[i for i, _ in ACCUMULATE])
def test_accumulate_with_duplicates(stmt, dtype_name):
    kx, tx = make_x(kiln, dtype_name), make_x(torch, dtype_name)
    k_env, t_env = names(kiln, kx), names(torch, tx)
    k_env["torch_or_kiln"], t_env["torch_or_kiln"] = kiln, torch
    exec(stmt, t_env)
    exec(stmt, k_env)
    assert_same_result(k_env["x"], t_env["x"])


def test_accumulate_does_not_depend_on_thread_count():
    data = np.random.default_rng(0).standard_normal((4096, 8)).astype(np.float32)
    idx = np.random.default_rng(1).integers(0, 16, 4096)
    results = []
    for threads in (1, 2):
        kiln.set_num_threads(threads)
        x = kiln.zeros(16, 8)
        x.index_put_((kiln.tensor(idx),), kiln.tensor(data), accumulate=True)
        results.append(x.numpy().copy())
    assert np.array_equal(results[0], results[1])


# --- random index tuples ----------------------------------------------------------------------


def random_index(rng, shape, mod):
    """A random index tuple for `shape` mixing every kind of item (some of them out of range)."""
    items = []
    dim = 0
    ellipsis = False
    for _ in range(int(rng.integers(1, len(shape) + 3))):
        kind = rng.choice(["int", "slice", "none", "ellipsis", "list", "tensor", "mask", "bool", "tensor0"])
        size = shape[dim] if dim < len(shape) else 1
        if kind == "int":
            items.append(int(rng.integers(-size - 1, size + 1)))
            dim += 1
        elif kind == "slice":
            start, stop = (int(v) if rng.random() < 0.7 else None for v in rng.integers(-size - 2, size + 2, 2))
            items.append(slice(start, stop, int(rng.integers(1, 3))))
            dim += 1
        elif kind == "none":
            items.append(None)
        elif kind == "ellipsis" and not ellipsis:
            items.append(Ellipsis)
            ellipsis = True
        elif kind == "list":
            items.append([int(v) for v in rng.integers(-size, max(size, 1), int(rng.integers(0, 4)))])
            dim += 1
        elif kind == "tensor":
            n = int(rng.integers(1, 3))
            items.append(mod.tensor(rng.integers(-size, max(size, 1), (n, 2) if rng.random() < 0.3 else (2,))))
            dim += 1
        elif kind == "mask" and dim < len(shape):
            k = int(rng.integers(1, len(shape) - dim + 1))
            items.append(mod.tensor(rng.random(shape[dim:dim + k]) < 0.5))
            dim += k
        elif kind == "bool":
            items.append(bool(rng.random() < 0.5))
        elif kind == "tensor0":
            items.append(mod.tensor(int(rng.integers(-size, max(size, 1)))))
            dim += 1
    return tuple(items)


@pytest.mark.parametrize("seed", range(200))
def test_random_index_tuples(seed):
    rng_shape = np.random.default_rng(seed)
    shape = tuple(int(s) for s in rng_shape.integers(1, 5, int(rng_shape.integers(1, 5))))
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    # The same random draws build the index for each library.
    t_index = random_index(np.random.default_rng(seed + 1000), shape, torch)
    k_index = random_index(np.random.default_rng(seed + 1000), shape, kiln)
    tx, kx = torch.tensor(data), kiln.tensor(data)
    t_error = raised(lambda: tx[t_index])
    if t_error is not None:
        k_error = raised(lambda: kx[k_index])
        if "single ellipsis" in str(k_error):  # kiln refuses a second Ellipsis (test_views.py)
            return
        assert_same_error_text(k_error, t_error)
        return
    t_result = tx[t_index]
    assert_same_result(kx[k_index], t_result, check_stride=False)
    # Assignment through the same index writes the same elements.
    value = np.arange(int(np.prod(t_result.shape)), dtype=np.float32).reshape(tuple(t_result.shape)) + 100
    tx[t_index] = torch.tensor(value)
    kx[k_index] = kiln.tensor(value)
    advanced = any(isinstance(i, list) or (isinstance(i, torch.Tensor) and i.dim() > 0) for i in t_index)
    if not advanced:
        assert_same_result(kx, tx)
        return
    # Repeated advanced indices leave the winner of a duplicate write unspecified: where the
    # two differ, each must hold one of the written values.
    differ = values(tx) != values(kx)
    assert np.isin(values(kx)[differ], value).all() and np.isin(values(tx)[differ], value).all()
