"""Converters: views and copies that move data (reshape/view/flatten,
transpose/permute, slicing/select/narrow, cat/stack/split/unbind, expand/repeat,
squeeze/unsqueeze), indexing (gather, index_select, index), and tensor
creation (arange, zeros/ones/full and their _like forms, tril/triu)."""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from kiln.onnx._builder import NUMPY_DTYPES, ONNX_DTYPES
from kiln.onnx.errors import UnsupportedOperatorError
from kiln.onnx._operands import dim, squeeze, unsqueeze
from kiln.onnx._registry import Tensor, converts
from kiln.onnx._symbolic import SymInt

_INT64_MAX = 9223372036854775807


@converts("kiln::view", "kiln::_unsafe_view", "kiln::_reshape_alias", args="self size")
def _reshape(cx, a):
    return cx.b.op("Reshape", [a.tensor("self"), cx.b.ints(a.ints("size"))])


converts("kiln::reshape", args="self shape")(
    lambda cx, a: cx.b.op("Reshape", [a.tensor("self"), cx.b.ints(a.ints("shape"))]))


@converts("kiln::flatten.using_ints", args="self start_dim end_dim")
def _flatten(cx, a):
    rank = a.rank("self")
    start, end = dim(a.value("start_dim", 0), rank), dim(a.value("end_dim", -1), rank)
    if rank == 0:
        return cx.b.op("Reshape", [a.tensor("self"), cx.b.ints([1])])
    shape = [0] * start + [-1] + [0] * (rank - 1 - end)
    return cx.b.op("Reshape", [a.tensor("self"), cx.b.ints(shape)])


@converts("kiln::unflatten.int", args="self dim sizes")
def _unflatten(cx, a):
    rank = a.rank("self")
    d = dim(a.value("dim"), rank)
    shape = [0] * d + list(a.ints("sizes")) + [0] * (rank - 1 - d)
    return cx.b.op("Reshape", [a.tensor("self"), cx.b.ints(shape)])


@converts("kiln::transpose.int", args="self dim0 dim1")
def _transpose(cx, a):
    rank = a.rank("self")
    perm = list(range(rank))
    d0, d1 = dim(a.value("dim0"), rank), dim(a.value("dim1"), rank)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return cx.b.op("Transpose", [a.tensor("self")], perm=perm)


@converts("kiln::t", "kiln::numpy_T", args="self")
def _t(cx, a):
    rank = a.rank("self")
    return cx.b.op("Transpose", [a.tensor("self")], perm=list(reversed(range(rank))))


@converts("kiln::permute", args="self dims")
def _permute(cx, a):
    rank = a.rank("self")
    return cx.b.op("Transpose", [a.tensor("self")], perm=[dim(d, rank) for d in a.static_ints("dims")])


@converts("kiln::movedim.int", "kiln::movedim.intlist", args="self source destination")
def _movedim(cx, a):
    rank = a.rank("self")
    src = [dim(d, rank) for d in a.static_ints("source")]
    dst = [dim(d, rank) for d in a.static_ints("destination")]
    rest = [d for d in range(rank) if d not in src]
    perm = [None] * rank
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(rest)
    perm = [p if p is not None else next(it) for p in perm]
    return cx.b.op("Transpose", [a.tensor("self")], perm=perm)


def _identity(cx, a):
    return cx.b.op("Identity", [a.tensor("self")])


converts("kiln::clone", "kiln::contiguous", "kiln::detach", "kiln::alias", "kiln::lift_fresh", args="self")(_identity)


@converts("kiln::dropout", "kiln::feature_dropout", "kiln::alpha_dropout", args="self p train")
def _dropout(cx, a):
    if a.value("train"):
        raise UnsupportedOperatorError("kiln.onnx.export: dropout in training mode has no deterministic ONNX form")
    return cx.b.op("Identity", [a.tensor("self")])


@converts("kiln::native_dropout", args="self p train")
def _native_dropout(cx, a):
    if a.value("train"):
        raise UnsupportedOperatorError("kiln.onnx.export: dropout in training mode has no deterministic ONNX form")
    x = a.tensor("self")
    return [cx.b.op("Identity", [x]), cx.b.op("ConstantOfShape", [cx.b.op("Shape", [x])],
                                              value=_tensor_value(1, "bool"))]


def _tensor_value(v, dtype):
    return numpy_helper.from_array(np.asarray([v], dtype=NUMPY_DTYPES[dtype]))


def _slice(cx, x: str, axis: int, start, end, step=1) -> str:
    return cx.b.op("Slice", [x, cx.b.ints([start]), cx.b.ints([end]), cx.b.ints([axis]), cx.b.ints([step])])


@converts("kiln::slice.Tensor", args="self dim start end step")
def _slice_tensor(cx, a):
    start, end, step = a.value("start"), a.value("end"), a.value("step", 1)
    start = 0 if start is None else start
    end = _INT64_MAX if end is None else end
    if start == 0 and end == _INT64_MAX and step == 1:
        return cx.b.op("Identity", [a.tensor("self")])
    return _slice(cx, a.tensor("self"), dim(a.value("dim", 0), a.rank("self")), start, end, step)


@converts("kiln::narrow", args="self dim start length")
def _narrow(cx, a):
    start, length = a.value("start"), a.value("length")
    end = start + length if not isinstance(start, SymInt) and not isinstance(length, SymInt) else None
    if end is None:
        raise UnsupportedOperatorError("kiln.onnx.export: narrow with a dynamic start or length is not supported")
    return _slice(cx, a.tensor("self"), dim(a.value("dim"), a.rank("self")), start, end)


@converts("kiln::select.int", args="self dim index")
def _select(cx, a):
    index = a.value("index")
    if isinstance(index, SymInt):
        index_tensor = cx.b.op("Reshape", [cx.b.scalar_int(index), cx.b.ints([])])
    else:
        index_tensor = cx.b.constant(index, "int64")
    return cx.b.op("Gather", [a.tensor("self"), index_tensor], axis=dim(a.value("dim"), a.rank("self")))


@converts("kiln::unsqueeze", args="self dim")
def _unsqueeze(cx, a):
    return unsqueeze(cx, a.tensor("self"), [dim(a.value("dim"), a.rank("self") + 1)])


@converts("kiln::squeeze", "kiln::squeeze.dim", "kiln::squeeze.dims", args="self dim")
def _squeeze(cx, a):
    sizes = a.sizes("self")
    rank = len(sizes)
    d = a.value("dim")
    dims = range(rank) if d is None else [dim(x, rank) for x in ([d] if isinstance(d, int) else d)]
    dims = [x for x in dims if sizes[x] == 1]  # squeezing a dim that is not 1 does nothing
    if not dims:
        return cx.b.op("Identity", [a.tensor("self")])
    return squeeze(cx, a.tensor("self"), dims)


@converts("kiln::expand", args="self size implicit")
def _expand(cx, a):
    size = [1 if (isinstance(s, int) and s == -1) else s for s in a.ints("size")]
    return cx.b.op("Expand", [a.tensor("self"), cx.b.ints(size)])


@converts("kiln::expand_as", args="self other")
def _expand_as(cx, a):
    return cx.b.op("Expand", [a.tensor("self"), cx.b.op("Shape", [a.tensor("other")])])


@converts("kiln::repeat", args="self repeats")
def _repeat(cx, a):
    repeats = a.ints("repeats")
    x = a.tensor("self")
    extra = len(repeats) - a.rank("self")
    if extra > 0:
        x = unsqueeze(cx, x, list(range(extra)))
    return cx.b.op("Tile", [x, cx.b.ints(repeats)])


@converts("kiln::cat", args="tensors dim")
def _cat(cx, a):
    tensors = a.value("tensors")
    d = a.value("dim", 0)
    if d < 0:
        d += _list_rank(cx, a)
    return cx.b.op("Concat", list(tensors), axis=d)


def _list_rank(cx, a):
    """The rank of the tensors in a Tensor[] argument (read from the list's first element's type)."""
    elements = cx.list_elements(a.item("tensors"))
    if elements:
        return cx.rank_of(elements[0])
    raise UnsupportedOperatorError("kiln.onnx.export: cat/stack with a negative dim over a list of unknown rank")


@converts("kiln::stack", args="tensors dim")
def _stack(cx, a):
    d = a.value("dim", 0)
    if d < 0:
        d += _list_rank(cx, a) + 1
    return cx.b.op("Concat", [unsqueeze(cx, t, [d]) for t in a.value("tensors")], axis=d)


def _split_outputs(cx, x: str, axis: int, sizes: list):
    sym = any(isinstance(s, SymInt) for s in sizes)
    if sym:
        raise UnsupportedOperatorError("kiln.onnx.export: split sizes that depend on a dynamic axis are not supported")
    if len(sizes) == 1:
        return [cx.b.op("Identity", [x])]
    return cx.b.op("Split", [x, cx.b.ints(sizes)], outputs=len(sizes), axis=axis)


def _split_sizes(total: int, size: int) -> list:
    sizes = [size] * (total // size)
    if total % size:
        sizes.append(total % size)
    return sizes or [0]


@converts("kiln::split.Tensor", args="self split_size dim")
def _split(cx, a):
    axis = dim(a.value("dim", 0), a.rank("self"))
    total = a.sizes("self")[axis]
    if not isinstance(total, int):
        raise UnsupportedOperatorError("kiln.onnx.export: split along a dynamic axis is not supported")
    return _split_outputs(cx, a.tensor("self"), axis, _split_sizes(total, a.int("split_size")))


@converts("kiln::split_with_sizes", args="self split_sizes dim")
def _split_with_sizes(cx, a):
    axis = dim(a.value("dim", 0), a.rank("self"))
    return _split_outputs(cx, a.tensor("self"), axis, a.ints("split_sizes"))


@converts("kiln::split.sizes", args="self split_size dim")
def _split_sizes_overload(cx, a):
    axis = dim(a.value("dim", 0), a.rank("self"))
    return _split_outputs(cx, a.tensor("self"), axis, a.ints("split_size"))


@converts("kiln::chunk", args="self chunks dim")
def _chunk(cx, a):
    axis = dim(a.value("dim", 0), a.rank("self"))
    total = a.sizes("self")[axis]
    if not isinstance(total, int):
        raise UnsupportedOperatorError("kiln.onnx.export: chunk along a dynamic axis is not supported")
    chunks = a.int("chunks")
    size = -(-total // chunks)
    return _split_outputs(cx, a.tensor("self"), axis, _split_sizes(total, size))


@converts("kiln::unbind.int", args="self dim")
def _unbind(cx, a):
    axis = dim(a.value("dim", 0), a.rank("self"))
    total = a.sizes("self")[axis]
    if not isinstance(total, int):
        raise UnsupportedOperatorError("kiln.onnx.export: unbind along a dynamic axis is not supported")
    parts = _split_outputs(cx, a.tensor("self"), axis, [1] * total)
    return [squeeze(cx, p, [axis]) for p in parts]


@converts("kiln::flip", args="self dims")
def _flip(cx, a):
    rank = a.rank("self")
    dims = [dim(d, rank) for d in a.static_ints("dims")]
    n = len(dims)
    return cx.b.op("Slice", [a.tensor("self"), cx.b.ints([-1] * n), cx.b.ints([-_INT64_MAX] * n), cx.b.ints(dims),
                             cx.b.ints([-1] * n)])


# --- indexing ---------------------------------------------------------------------------------------------
@converts("kiln::index_select", args="self dim index")
def _index_select(cx, a):
    return cx.b.op("Gather", [a.tensor("self"), a.tensor("index")], axis=dim(a.value("dim"), a.rank("self")))


@converts("kiln::gather", args="self dim index sparse_grad")
def _gather(cx, a):
    return cx.b.op("GatherElements", [a.tensor("self"), a.tensor("index")],
                   axis=dim(a.value("dim"), a.rank("self")))


@converts("kiln::index.Tensor", args="self indices")
def _index(cx, a):
    indices = a.value("indices")
    present = [k for k, t in enumerate(indices) if t is not None]
    x = a.tensor("self")
    if len(present) == 1:
        k = present[0]
        index = indices[k]
        if cx.dtype_of(cx.list_elements(a.item("indices"))[k]) == "bool":
            raise UnsupportedOperatorError("kiln.onnx.export: indexing with a boolean mask has a data-dependent shape")
        return cx.b.op("Gather", [x, index], axis=k)
    raise UnsupportedOperatorError("kiln.onnx.export: advanced indexing with several index tensors is not supported")


@converts("kiln::embedding", args="weight indices padding_idx scale_grad_by_freq sparse")
def _embedding(cx, a):
    return cx.b.op("Gather", [a.tensor("weight"), a.tensor("indices")], axis=0)


@converts("kiln::one_hot", args="self num_classes")
def _one_hot(cx, a):
    n = a.int("num_classes")
    if n < 0:
        raise UnsupportedOperatorError("kiln.onnx.export: one_hot needs num_classes (its default depends on the data)")
    return cx.b.op("OneHot", [a.tensor("self"), cx.b.constant(n, "int64"), cx.b.constant([0, 1], "int64")],
                   axis=-1)


# --- creation ---------------------------------------------------------------------------------------------
@converts("kiln::arange", "kiln::arange.start", "kiln::arange.start_step", args="start end step")
def _arange(cx, a):
    t = a.out_dtype()
    if a.node.kind == "kiln::arange":
        start, end, step = 0, a.value("start") if "end" not in a.node.keyword else a.value("end"), 1
    else:
        start, end, step = a.value("start"), a.value("end"), a.value("step", 1)

    def scalar(v):
        if isinstance(v, SymInt):
            return cx.b.cast(cx.b.op("Reshape", [cx.b.scalar_int(v), cx.b.ints([])]), "int64", t)
        return cx.b.constant(v, t)

    return cx.b.op("Range", [scalar(start), scalar(end), scalar(step)])


def _filled(cx, a, shape: str, value):
    t = a.out_dtype()
    return cx.b.op("Expand", [cx.b.constant(value, t), shape])


converts("kiln::zeros", args="size")(lambda cx, a: _filled(cx, a, cx.b.ints(a.ints("size")), 0))
converts("kiln::ones", args="size")(lambda cx, a: _filled(cx, a, cx.b.ints(a.ints("size")), 1))
converts("kiln::full", args="size fill_value")(
    lambda cx, a: _filled(cx, a, cx.b.ints(a.ints("size")), a.value("fill_value")))
converts("kiln::zeros_like", args="self")(lambda cx, a: _filled(cx, a, cx.b.op("Shape", [a.tensor("self")]), 0))
converts("kiln::ones_like", args="self")(lambda cx, a: _filled(cx, a, cx.b.op("Shape", [a.tensor("self")]), 1))
converts("kiln::full_like", args="self fill_value")(
    lambda cx, a: _filled(cx, a, cx.b.op("Shape", [a.tensor("self")]), a.value("fill_value")))
converts("kiln::scalar_tensor", args="s")(lambda cx, a: cx.b.constant(a.value("s"), a.out_dtype()))


@converts("kiln::type_as", args="self other")
def _type_as(cx, a):
    return cx.b.op("Cast", [a.tensor("self")], to=ONNX_DTYPES[a.out_dtype()])


def _triangle(upper):
    def convert(cx, a):
        k = a.value("diagonal", 0)
        return cx.b.op("Trilu", [a.tensor("self"), cx.b.constant(k, "int64")], upper=1 if upper else 0)
    return convert


converts("kiln::tril", args="self diagonal")(_triangle(False))
converts("kiln::triu", args="self diagonal")(_triangle(True))


# --- random (Note [Random ops under capture], capture/CaptureSession.h) -------------------------------------
# A captured draw is ``empty_strided`` filled in place by ``normal_``/``uniform_`` with a
# ``capture::philox_generator`` made from the graph's seed and offset inputs. ONNX's random ops keep their own
# state, so the generator has no ONNX form and the draw becomes RandomNormalLike / RandomUniformLike (the
# values differ from kiln's: only their distribution is the same).
converts("capture::philox_generator", args="seed offset relative_offset")(lambda cx, a: None)


@converts("kiln::empty_strided", "kiln::empty", args="size stride")
def _empty(cx, a):
    return _filled(cx, a, cx.b.ints(a.ints("size")), 0)


@converts("kiln::normal_", args="self mean std generator")
def _normal(cx, a):
    return cx.b.op("RandomNormalLike", [a.tensor("self")], mean=float(a.value("mean", 0.0)),
                   scale=float(a.value("std", 1.0)))


@converts("kiln::uniform_", args="self from to generator")
def _uniform(cx, a):
    return cx.b.op("RandomUniformLike", [a.tensor("self")], low=float(a.value("from", 0.0)),
                   high=float(a.value("to", 1.0)))


@converts("kiln::as_strided", args="self size stride storage_offset")
def _as_strided(cx, a):
    """Only the view of a whole contiguous tensor in another contiguous shape (what full_like records)."""
    sizes, strides = a.sizes("self"), cx.types[a.item("self").name].strides
    size, stride = a.static_ints("size"), a.static_ints("stride")
    if not (a.value("storage_offset") in (None, 0) and _contiguous(sizes, strides) and _contiguous(size, stride)
            and _numel(size) == _numel(sizes)):
        raise UnsupportedOperatorError("kiln.onnx.export: as_strided other than a contiguous view of a whole "
                                       "contiguous tensor has no ONNX form")
    cx.full_views[a.node.outputs[0][0]] = a.item("self").name
    return cx.b.op("Reshape", [a.tensor("self"), cx.b.ints(size)])


def _numel(sizes) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n


def _contiguous(sizes, strides) -> bool:
    if sizes is None or strides is None or not all(isinstance(s, int) for s in sizes):
        return False
    expected = 1
    for size, stride in zip(reversed(sizes), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


@converts("kiln::fill_.Scalar", args="self value")
def _fill(cx, a):
    return _filled(cx, a, cx.b.op("Shape", [a.tensor("self")]), a.value("value"))


@converts("kiln::zero_", args="self")
def _zero(cx, a):
    return _filled(cx, a, cx.b.op("Shape", [a.tensor("self")]), 0)


@converts("kiln::scatter.src", "kiln::scatter.value", args="self dim index src")
def _scatter(cx, a):
    x, index = a.tensor("self"), a.tensor("index")
    src = a.value("src") if a.node.kind.endswith(".src") else a.value("value")
    if not isinstance(src, Tensor):
        src = cx.b.op("Expand", [cx.b.constant(src, a.out_dtype()), cx.b.op("Shape", [index])])
    return cx.b.op("ScatterElements", [x, index, src], axis=dim(a.value("dim"), a.rank("self")))


@converts("kiln::repeat_interleave.self_int", args="self repeats dim output_size")
def _repeat_interleave(cx, a):
    """Each slice along ``dim`` repeated ``repeats`` times in place: unsqueeze after dim, expand, merge."""
    rank = a.rank("self")
    if a.value("dim") is None:
        raise UnsupportedOperatorError("kiln.onnx.export: repeat_interleave without dim is not supported")
    axis = dim(a.value("dim"), rank)
    repeats = a.int("repeats")
    x = unsqueeze(cx, a.tensor("self"), [axis + 1])
    expand = [1] * (rank + 1)
    expand[axis + 1] = repeats
    x = cx.b.op("Expand", [x, cx.b.ints(expand)])
    shape = [0] * axis + [-1] + [0] * (rank - 1 - axis)
    return cx.b.op("Reshape", [x, cx.b.ints(shape)])


@converts("kiln::constant_pad_nd", args="self pad value")
def _constant_pad(cx, a):
    """torch's pad list runs from the last dim backwards, (begin, end) pairs; ONNX's is all begins then all ends."""
    pad = a.static_ints("pad")
    rank = a.rank("self")
    begins, ends = [0] * rank, [0] * rank
    for k in range(len(pad) // 2):
        begins[rank - 1 - k], ends[rank - 1 - k] = pad[2 * k], pad[2 * k + 1]
    t = a.out_dtype()
    return cx.b.op("Pad", [a.tensor("self"), cx.b.ints(begins + ends), cx.b.constant(a.value("value", 0), t)],
                   mode="constant")
