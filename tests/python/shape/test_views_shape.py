"""Shape ops beyond the value table (test_shape_ops.py): in-place view ops,
identity results (contiguous() of a contiguous tensor is itself), detach,
function/method/out= forms agreeing, the T/mT/mH/H properties and their
warnings, memory_format objects, and large inputs that take the parallel,
tiled and memcpy paths under different thread counts.
"""

import inspect
import pickle
import warnings

import numpy as np
import pytest
import torch

import kiln
from shape_cases import DTYPES, compare_outcome, make
from torch_compare import as_kiln_text, assert_same_error, raised as _raises, values


def _same(k, t):
    assert tuple(k.shape) == tuple(t.shape)
    assert k.stride() == t.stride()
    assert k.storage_offset() == t.storage_offset()
    assert np.array_equal(values(k), values(t))


# --- in-place view ops: self gets the new geometry -----------------------------------------

INPLACE_VIEWS = [
    ("transpose_", (2, 3, 4), lambda x: x.transpose_(0, 2)),
    ("t_", (3, 4), lambda x: x.t_()),
    ("t__1d", (4,), lambda x: x.t_()),
    ("squeeze_", (1, 3, 1, 4), lambda x: x.squeeze_()),
    ("squeeze__dim", (1, 3, 1, 4), lambda x: x.squeeze_(2)),
    ("squeeze__dims", (1, 3, 1, 4), lambda x: x.squeeze_((0, 1, 2))),
    ("unsqueeze_", (2, 3), lambda x: x.unsqueeze_(-1)),
    ("swapaxes_", (2, 3, 4), lambda x: x.swapaxes_(0, 1)),
    ("swapdims_", (2, 3, 4), lambda x: x.swapdims_(-1, 0)),
    ("as_strided_", (3, 4), lambda x: x.as_strided_((2, 2), (1, 3), 1)),
    ("as_strided__function", (3, 4), lambda x: (torch if isinstance(x, torch.Tensor) else kiln).as_strided_(x, (4,), (2,))),
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "offset"])
@pytest.mark.parametrize("case", INPLACE_VIEWS, ids=[c[0] for c in INPLACE_VIEWS])
def test_inplace_view_ops(case, layout):
    _, shape, fn = case
    k, t = make(shape, "float32", layout)
    kv, tv = k._version, t._version
    kr, tr = fn(k), fn(t)
    assert kr is k and tr is t
    _same(k, t)
    assert k._version - kv == t._version - tv


INPLACE_VIEW_ERRORS = [
    ("transpose__range", lambda m: m.zeros(2, 3).transpose_(0, 2)),
    ("t__3d", lambda m: m.zeros(2, 3, 4).t_()),
    ("squeeze__dims_repeated", lambda m: m.zeros(1, 2).squeeze_((0, -2))),
    ("unsqueeze__range", lambda m: m.zeros(2, 3).unsqueeze_(3)),
    ("as_strided__out_of_bounds", lambda m: m.zeros(2, 3).as_strided_((3, 3), (3, 1))),
]


@pytest.mark.parametrize("fn", [c[1] for c in INPLACE_VIEW_ERRORS], ids=[c[0] for c in INPLACE_VIEW_ERRORS])
def test_inplace_view_errors(fn):
    assert_same_error(lambda: fn(kiln), lambda: fn(torch))


@pytest.mark.parametrize("op", ["tril_", "triu_"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "offset"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_tril_triu_in_place(op, layout, dtype):
    k, t = make((3, 4), dtype, layout)
    kv, tv = k._version, t._version
    assert getattr(k, op)(1) is k and getattr(t, op)(1) is t
    _same(k, t)
    assert k._version - kv == t._version - tv == 1


# --- results that are the input itself ------------------------------------------------------

IDENTITY = [
    ("contiguous", lambda m, x: x.contiguous()),
    ("contiguous_format", lambda m, x: x.contiguous(memory_format=m.contiguous_format)),
    ("flatten_same_dim", lambda m, x: x.flatten(1, 1)),
    ("view_same_dtype", lambda m, x: x.view(x.dtype)),
    ("mT_zero_dim", lambda m, x: x[0, 0].mT),
    ("broadcast_tensors_same_shape", lambda m, x: m.broadcast_tensors(x, x)[1]),
    ("detach_", lambda m, x: x.detach_()),
]


@pytest.mark.parametrize("case", IDENTITY, ids=[c[0] for c in IDENTITY])
def test_ops_returning_their_input(case):
    _, fn = case
    k, t = make((2, 3), "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k_in = k[0, 0] if case[0] == "mT_zero_dim" else k
        t_in = t[0, 0] if case[0] == "mT_zero_dim" else t
        assert (fn(kiln, k) is k_in) == (fn(torch, t) is t_in)


def test_contiguous_of_non_contiguous_is_a_new_tensor():
    k, t = make((2, 3), "float32", "transposed")
    kc, tc = k.contiguous(), t.contiguous()
    assert kc is not k and tc is not t
    _same(kc, tc)
    assert kc.data_ptr() != k.data_ptr()


# --- detach ---------------------------------------------------------------------------------

def test_detach_shares_storage_and_version_but_not_grad():
    k = kiln.zeros(2, 3).requires_grad_()
    t = torch.zeros(2, 3).requires_grad_()
    kd, td = k.detach(), t.detach()
    assert kd.requires_grad == td.requires_grad is False
    assert kd.data_ptr() == k.data_ptr() and kd is not k
    before = k._version
    kd.fill_(2.0)
    assert k._version == kd._version == before + 1
    assert k.tolist() == [[2.0] * 3] * 2


def test_detach_in_place_clears_requires_grad():
    k = kiln.zeros(2).requires_grad_()
    t = torch.zeros(2).requires_grad_()
    assert k.detach_() is k and t.detach_() is t
    assert k.requires_grad == t.requires_grad is False
    assert kiln.detach_(k) is k


# --- function and method forms agree ----------------------------------------------------------

BOTH_FORMS = [
    ("reshape", ((3, 8),)), ("flatten", (0, 1)), ("unflatten", (1, (1, 3))), ("ravel", ()), ("permute", ((2, 0, 1),)),
    ("transpose", (0, 1)), ("swapaxes", (1, 2)), ("swapdims", (0, 2)), ("adjoint", ()), ("squeeze", ()),
    ("unsqueeze", (1,)), ("broadcast_to", ((2, 2, 3, 4),)), ("narrow", (2, 1, 2)), ("select", (1, 0)),
    ("split", (2, 2)), ("split_with_sizes", ([1, 2], 1)), ("chunk", (2, 2)), ("unbind", (1,)),
    ("tensor_split", (2, 1)), ("movedim", (0, 1)), ("moveaxis", (2, 0)), ("as_strided", ((2, 2), (1, 2))),
    ("diagonal", (0, 1, 2)), ("detach", ()), ("clone", ()), ("repeat_interleave", (2,)), ("flip", ((0, 1),)),
    ("fliplr", ()), ("flipud", ()), ("roll", (1, 2)), ("rot90", (1, (1, 2))), ("tril", (1,)), ("triu", (-1,)),
    ("diag_embed", ()),
]


@pytest.mark.parametrize("name,args", BOTH_FORMS, ids=[c[0] for c in BOTH_FORMS])
def test_function_and_method_agree(name, args):
    k, t = make((2, 3, 4), "float32", "transposed")
    by_function = getattr(kiln, name)(k, *args)
    by_method = getattr(k, name)(*args)
    compare_outcome(lambda: by_function, lambda: getattr(torch, name)(t, *args), [k], [t])
    compare_outcome(lambda: by_method, lambda: getattr(t, name)(*args), [k], [t])


# --- out= -------------------------------------------------------------------------------------

OUT_OPS = [
    ("cat", lambda m, a, b: ([a, b],), {}),
    ("cat_dim", lambda m, a, b: ([a, b], 1), {}),
    ("concat", lambda m, a, b: ([a, b],), {}),
    ("concatenate", lambda m, a, b: ([a, b], -1), {}),
    ("stack", lambda m, a, b: ([a, b], 1), {}),
    ("hstack", lambda m, a, b: ([a, b],), {}),
    ("vstack", lambda m, a, b: ([a, b],), {}),
    ("dstack", lambda m, a, b: ([a, b],), {}),
    ("column_stack", lambda m, a, b: ([a, b],), {}),
    ("tril", lambda m, a, b: (a, 1), {}),
    ("triu", lambda m, a, b: (b,), {}),
    ("diag", lambda m, a, b: (a,), {}),
]


def _out_call(m, name, args_fn, a, b, out):
    op = name.split("_")[0] if name.startswith("cat_") else name
    return getattr(m, op)(*args_fn(m, a, b), out=out)


@pytest.mark.parametrize("out_kind", ["exact", "empty", "resized", "strided", "wider_dtype"])
@pytest.mark.parametrize("case", OUT_OPS, ids=[c[0] for c in OUT_OPS])
def test_out_forms(case, out_kind):
    name, args_fn, _ = case
    ka, ta = make((3, 3), "float32", "transposed", seed=1)
    kb, tb = make((3, 3), "float32", seed=2)
    expected = _out_call(torch, name, args_fn, ta, tb, None)
    shape = tuple(expected.shape)

    def make_out(m):
        if out_kind == "exact":
            return m.zeros(shape)
        if out_kind == "empty":
            return m.zeros(0)
        if out_kind == "resized":
            return m.zeros(5)
        if out_kind == "strided":  # the right shape, written through its strides
            return m.zeros(tuple(reversed(shape))).permute(tuple(range(len(shape) - 1, -1, -1)))
        return m.zeros(shape, dtype=m.float64)

    k_out, t_out = make_out(kiln), make_out(torch)
    # (A resized non-empty out= warns on both sides; kiln's C++ warnings reach
    # Python once the warning handler is installed, so only values are compared.)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if raised := _raises(lambda: _out_call(torch, name, args_fn, ta, tb, t_out)):
            assert_same_error(lambda: _out_call(kiln, name, args_fn, ka, kb, k_out), lambda: raised_again(raised))
            return
        k_result = _out_call(kiln, name, args_fn, ka, kb, k_out)
    assert k_result is k_out
    _same(k_out, t_out)


def raised_again(error):
    raise error


# --- T, mT, mH, H -------------------------------------------------------------------------------

PROPERTY_CASES = [("T", ()), ("T", (3,)), ("T", (2, 3)), ("T", (2, 3, 4)), ("mT", ()), ("mT", (3,)), ("mT", (2, 3, 4)),
                  ("mH", ()), ("mH", (3,)), ("mH", (4, 2, 3)), ("H", ()), ("H", (3,)), ("H", (2, 3)), ("H", (2, 3, 4))]


# PyTorch warns once per process (TORCH_WARN_ONCE), so its texts are written
# here (aten/src/ATen/native/TensorShape.cpp) rather than caught per test.
_T_WARNING = ("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it will "
              "throw an error in a future release. Consider `x.mT` to transpose batches of matrices or "
              "`x.permute(*kiln.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.")
EXPECTED_WARNINGS = {
    ("T", 0): ["Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases."],
    ("T", 1): [_T_WARNING], ("T", 3): [_T_WARNING],
    ("mT", 0): ["Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases."],
    ("mH", 0): ["Tensor.mH is deprecated on 0-D tensors. Consider using x.conj()."],
    ("H", 0): ["Tensor.H is deprecated on 0-D tensors. Consider using x.conj()."],
}


@pytest.mark.parametrize("name,shape", PROPERTY_CASES, ids=[f"{n}{s}" for n, s in PROPERTY_CASES])
def test_transpose_properties(name, shape):
    import kiln._tensor as kiln_tensor

    kiln_tensor._warned.clear()  # warn-once state: each case sees its first warning
    k, t = make(shape, "float32", "offset")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch_error = _raises(lambda: getattr(t, name))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kiln_error = _raises(lambda: getattr(k, name))
        kiln_warnings = [str(w.message) for w in caught]
    if torch_error is not None:
        assert type(kiln_error) is type(torch_error) and str(kiln_error) == as_kiln_text(str(torch_error))
        return
    assert kiln_error is None
    assert kiln_warnings == EXPECTED_WARNINGS.get((name, len(shape)), [])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(getattr(k, name), getattr(t, name))


def test_transpose_property_warns_once():
    import kiln._tensor as kiln_tensor

    kiln_tensor._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kiln.zeros(3).T
        kiln.zeros(4).T
    assert len(caught) == 1


# --- memory_format objects ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["contiguous_format", "preserve_format", "channels_last", "channels_last_3d"])
def test_memory_format_objects(name):
    f = getattr(kiln, name)
    assert isinstance(f, kiln.memory_format)
    assert repr(f) == as_kiln_text(repr(getattr(torch, name)))
    assert pickle.loads(pickle.dumps(f)) is f


def test_memory_format_argument_type_error():
    assert_same_error(lambda: kiln.zeros(2).clone(memory_format=kiln.float32),
                      lambda: torch.zeros(2).clone(memory_format=torch.float32))


def test_python_level_signatures_match_torch():
    for name in ("split", "broadcast_tensors", "broadcast_shapes"):
        k_params = list(inspect.signature(getattr(kiln, name)).parameters)
        t_params = list(inspect.signature(getattr(torch, name)).parameters)
        assert k_params == t_params, name


BROADCAST_SHAPES = [((2, 1), (3,)), ((), (4, 1)), ((0, 1), (1, 5)), (3, (2, 1)), ((2, 3), (4, 3)), ((1, -1),)]


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=[str(s) for s in BROADCAST_SHAPES])
def test_broadcast_shapes(shapes):
    error = _raises(lambda: torch.broadcast_shapes(*shapes))
    if error is not None:
        assert_same_error(lambda: kiln.broadcast_shapes(*shapes), lambda: torch.broadcast_shapes(*shapes))
        return
    assert tuple(kiln.broadcast_shapes(*shapes)) == tuple(torch.broadcast_shapes(*shapes))


# --- large inputs: memcpy, tiled and parallel paths, any thread count -------------------------------

LARGE = [
    ("contiguous_transposed", [(513, 1031)], "transposed", lambda m, x: x.contiguous()),
    ("contiguous_batched_transposed", [(3, 200, 130)], "transposed", lambda m, x: x.contiguous()),
    ("clone_strided", [(300, 700)], "strided", lambda m, x: x.clone(memory_format=m.contiguous_format)),
    ("reshape_copy", [(300, 700)], "transposed", lambda m, x: x.reshape(-1)),
    ("cat_dim0", [(400, 300), (300, 300)], "contiguous", lambda m, a, b: m.cat([a, b])),
    ("cat_dim1", [(400, 300), (400, 100)], "contiguous", lambda m, a, b: m.cat([a, b], 1)),
    ("cat_transposed", [(400, 300), (400, 100)], "transposed", lambda m, a, b: m.cat([a, b], 1)),
    ("stack", [(300, 500), (300, 500)], "contiguous", lambda m, a, b: m.stack([a, b], 2)),
    ("repeat", [(200, 300)], "contiguous", lambda m, x: x.repeat(3, 2)),
    ("repeat_last_dim", [(20000, 3)], "contiguous", lambda m, x: x.repeat(1, 5)),
    ("flip_last", [(300, 400)], "contiguous", lambda m, x: x.flip(-1)),
    ("flip_transposed", [(300, 400)], "transposed", lambda m, x: x.flip(0, 1)),
    ("roll", [(300, 400)], "strided", lambda m, x: x.roll((7, -3), (0, 1))),
    ("tril", [(4, 300, 300)], "contiguous", lambda m, x: x.tril(3)),
    ("triu_transposed", [(500, 400)], "transposed", lambda m, x: x.triu(-2)),
    ("repeat_interleave", [(300, 400)], "contiguous", lambda m, x: x.repeat_interleave(3, dim=0)),
    ("repeat_interleave_flat", [(100000,)], "offset", lambda m, x: x.repeat_interleave(2)),
    ("diag_embed", [(300,)], "contiguous", lambda m, x: x.diag_embed()),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "int8", "float16", "float64"])
@pytest.mark.parametrize("case", LARGE, ids=[c[0] for c in LARGE])
def test_large_inputs_any_thread_count(case, dtype, threads):
    _, shapes, layout, fn = case
    pairs = [make(s, dtype, layout, seed=i) for i, s in enumerate(shapes)]
    ks, ts = [k for k, _ in pairs], [t for _, t in pairs]
    before = kiln.get_num_threads()
    kiln.set_num_threads(threads)
    try:
        compare_outcome(lambda: fn(kiln, *ks), lambda: fn(torch, *ts), ks, ts)
    finally:
        kiln.set_num_threads(before)
