"""The Python bindings tools/opgen generates from ops.yaml (kiln._C._functions and
the Tensor methods), against torch==2.13.0: values, broadcasting, promotion,
out=/in-place, views, signatures and argument errors."""

from __future__ import annotations

import importlib
import inspect
import threading

import numpy as np
import pytest
import torch

import kiln

torch.set_num_threads(1)


def pair(shape, dtype="float32", seed=0, low=-5, high=5):
    """The same values as a kiln tensor and a torch tensor."""
    rng = np.random.default_rng(seed + len(shape))
    a = rng.uniform(low, high, size=shape)
    a = a.astype(dtype) if dtype != "bool" else a > 0
    return kiln.from_numpy(np.ascontiguousarray(a)), torch.from_numpy(np.ascontiguousarray(a))


def assert_same(k, t):
    assert str(k.dtype).removeprefix("kiln.") == str(t.dtype).removeprefix("torch.")
    assert tuple(k.shape) == tuple(t.shape)
    np.testing.assert_allclose(k.numpy().astype(np.float64), t.numpy().astype(np.float64), rtol=1e-6, atol=1e-6)


BROADCAST = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1), (1, 5)), ((), (3,)), ((2, 1, 3), (4, 1)), ((0, 3), (1, 3)),
             ((3,), ())]


@pytest.mark.parametrize("sa, sb", BROADCAST)
def test_add_function_method_and_alpha_broadcast_like_torch(sa, sb):
    (ka, ta), (kb, tb) = pair(sa), pair(sb, seed=1)
    assert_same(kiln.add(ka, kb), torch.add(ta, tb))
    assert_same(ka.add(kb), ta.add(tb))
    assert_same(kiln.add(ka, kb, alpha=2.5), torch.add(ta, tb, alpha=2.5))
    assert_same(kiln.add(input=ka, other=kb), torch.add(input=ta, other=tb))


@pytest.mark.parametrize("sa, sb", [s for s in BROADCAST if np.broadcast_shapes(*s) == s[0]])
def test_add_in_place_and_out_write_their_target(sa, sb):
    (ka, ta), (kb, tb) = pair(sa), pair(sb, seed=1)
    result = ka.add_(kb, alpha=-1)
    ta.add_(tb, alpha=-1)
    assert result is ka
    assert_same(ka, ta)

    kout, tout = kiln.empty(np.broadcast_shapes(sa, sb)), torch.empty(np.broadcast_shapes(sa, sb))
    assert kiln.add(ka, kb, out=kout) is kout
    torch.add(ta, tb, out=tout)
    assert_same(kout, tout)


PROMOTIONS = [
    ("int32", "float32"), ("int64", "float64"), ("uint8", "int8"), ("bool", "int16"), ("float16", "float32"),
    ("bool", "bool"), ("int32", "int32"),
]


@pytest.mark.parametrize("da, db", PROMOTIONS)
def test_tensor_tensor_promotion(da, db):
    (ka, ta), (kb, tb) = pair((2, 3), da, low=0, high=9), pair((3,), db, seed=1, low=0, high=9)
    assert_same(kiln.add(ka, kb), torch.add(ta, tb))
    assert_same(kiln.add(kb, ka), torch.add(tb, ta))


@pytest.mark.parametrize("dtype, scalar", [("float16", 1.5), ("int32", 2.5), ("int32", 2), ("uint8", 3), ("bool", 1),
                                            ("bool", 0.5), ("float64", 2), ("int64", True)])
def test_tensor_scalar_promotion(dtype, scalar):
    ka, ta = pair((4,), dtype, low=0, high=9)
    assert_same(kiln.add(ka, scalar), torch.add(ta, scalar))
    assert_same(ka.add(scalar), ta.add(scalar))
    assert_same(kiln.add(ka, scalar, 2), torch.add(ta, scalar, alpha=2))


def test_zero_dim_tensors_promote_by_category():
    ka, ta = pair((3,), "int32", low=0, high=9)
    kz, tz = kiln.tensor(7, dtype=kiln.int64), torch.tensor(7, dtype=torch.int64)
    assert_same(kiln.add(ka, kz), torch.add(ta, tz))  # int32: a 0-dim int64 does not widen it
    kf, tf = kiln.tensor(0.5, dtype=kiln.float64), torch.tensor(0.5, dtype=torch.float64)
    assert_same(kiln.add(ka, kf), torch.add(ta, tf))  # float32: a higher category, default dtype


def test_add_out_with_a_non_float_out_follows_torchs_cast_rule():
    ka, ta = pair((3,))
    with pytest.raises(RuntimeError) as k:
        kiln.add(ka, ka, out=kiln.empty(3, dtype=kiln.int64))
    with pytest.raises(RuntimeError) as t:
        torch.add(ta, ta, out=torch.empty(3, dtype=torch.int64))
    assert str(k.value) == str(t.value)


# --- argument errors: TypeErrors naming the op, worded as torch words them --------------

SAME_AS_TORCH = {
    "add(a, a, a, a)": lambda m, a: m.add(a, a, a, a),
    "a.add_('x')": lambda m, a: a.add_("x"),
    "transpose(a, 'x', 1)": lambda m, a: m.transpose(a, "x", 1),
    "a.transpose(0)": lambda m, a: a.transpose(0),
    "a.transpose(0, 1, 2)": lambda m, a: a.transpose(0, 1, 2),
    "select(a, 0)": lambda m, a: m.select(a, 0),
    "a.select(0, 1.5)": lambda m, a: a.select(0, 1.5),
    "a.view(2, 'x')": lambda m, a: a.view(2, "x"),
    "a.as_strided((2,))": lambda m, a: a.as_strided((2,)),
    "empty(2, 'x')": lambda m, a: (m._C._functions if m is kiln else m).empty(2, "x"),
    "zeros(2, dtype=1)": lambda m, a: (m._C._functions if m is kiln else m).zeros(2, dtype=1),
}


def type_error(fn, module, tensor):
    with pytest.raises(TypeError) as info:
        fn(module, tensor)
    return str(info.value)


@pytest.mark.parametrize("call", SAME_AS_TORCH)
def test_type_errors_match_torch(call):
    fn = SAME_AS_TORCH[call]
    expected = type_error(fn, torch, torch.ones(2, 2)).replace("torch", "kiln")
    assert type_error(fn, kiln, kiln.ones(2, 2)) == expected


# kiln binds add.Scalar (and add_.Scalar, mul.Scalar, ...) hidden, where torch's
# parser folds Python numbers into the Tensor overload: errors name only the Tensor
# signature, as torch's. (torch.add also has a deprecated add(input, alpha, other)
# that kiln does not bind, so for add() the wording can differ: kiln gives the
# Tensor signature's exact problem.)
ADD_CALLS = [lambda m, a: m.add(a), lambda m, a: m.add("x", a), lambda m, a: m.add(a, "x"),
             lambda m, a: m.add(a, a, beta=2), lambda m, a: m.add(a, a, alpha="x")]


@pytest.mark.parametrize("call", ADD_CALLS)
def test_add_type_errors_name_the_tensor_signature(call):
    message = type_error(call, kiln, kiln.ones(2))
    assert message.startswith("add()") and "Number other" not in message


def test_add_out_must_be_a_tensor():
    # (torch turns out=1 into a tensor, then fails on its dtype; kiln's parser refuses it.)
    message = type_error(lambda m, a: m.add(a, a, out=1), kiln, kiln.ones(2))
    assert message == "add(): argument 'out' must be Tensor, not int"


def test_method_type_errors_name_the_method():
    message = type_error(lambda m, a: a.add("x"), kiln, kiln.ones(2))
    assert message == "add(): argument 'other' (position 1) must be Tensor, not str"
    assert type_error(lambda m, a: a.add_(), kiln, kiln.ones(2)) == 'add_() missing 1 required positional arguments: "other"'
    assert kiln.ones(2).add(1.5).tolist() == [2.5, 2.5]  # the hidden Scalar overload still takes numbers


# --- signatures ----------------------------------------------------------------------------


def test_signatures_are_introspectable():
    assert str(inspect.signature(kiln.add)) == "(input, other, *, alpha=1, out=None)"
    params = inspect.signature(kiln.add).parameters
    assert params["alpha"].kind is inspect.Parameter.KEYWORD_ONLY and params["alpha"].default == 1
    assert params["out"].default is None
    assert str(inspect.signature(kiln.transpose)) == "(input, dim0, dim1)"
    assert str(inspect.signature(kiln.Tensor.add)) == "(self, /, other, *, alpha=1)"
    assert str(inspect.signature(kiln._C._functions.empty)) == (
        "(size, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False)")
    assert "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)" in kiln.add.__doc__


@pytest.mark.parametrize("name", ["topk", "sort", "max", "min", "aminmax"])
def test_named_tuple_ops_keep_the_builtin_signature(name):
    # These are Python wrappers (kiln.return_types._named) around the generated
    # builtins; their signature must be the builtin's, without its $module.
    sig = inspect.signature(getattr(kiln, name))
    assert "module" not in sig.parameters and next(iter(sig.parameters)) == "input"
    assert str(inspect.signature(kiln.topk)) == "(input, k, dim=-1, largest=True, sorted=True, *, out=None)"
    assert str(inspect.signature(kiln.Tensor.topk)) == "(self, /, k, dim=-1, largest=True, sorted=True)"


def test_creation_functions_are_the_generated_dispatcher_bindings():
    # The foundation's creation functions now run through ops.yaml and the
    # dispatcher (BackendSelect picks the backend); only tensor() stays
    # hand-written Python (the *_like forms are ops of creation.yaml).
    for name in ("add", "transpose", "select", "as_strided", "fill_", "zero_",
                 "empty", "zeros", "ones", "full", "arange", "linspace",
                 "zeros_like", "ones_like", "empty_like", "full_like"):
        assert getattr(kiln, name) is getattr(kiln._C._functions, name)
    creation = importlib.import_module("kiln._creation")
    assert kiln.tensor is creation.tensor


# --- factories -----------------------------------------------------------------------------


def test_generated_factories():
    f = kiln._C._functions
    assert f.empty(2, 3).shape == (2, 3)
    assert f.empty((2, 3)).shape == (2, 3)
    assert f.empty(size=[4]).shape == (4,)
    z = f.zeros(2, 2, dtype=kiln.int32)
    assert z.dtype is kiln.int32 and z.tolist() == [[0, 0], [0, 0]]
    assert f.ones(3, device="cpu").tolist() == [1.0, 1.0, 1.0]
    assert f.full((2,), 7).dtype is kiln.int64
    assert f.full((2,), True).dtype is kiln.bool
    assert f.full((2,), 0.5).dtype is kiln.get_default_dtype()
    assert f.arange(5).tolist() == torch.arange(5).tolist()
    assert f.arange(1, 4).tolist() == [1, 2, 3]
    assert f.arange(0, 1, 0.25).tolist() == torch.arange(0, 1, 0.25).tolist()
    assert f.linspace(0, 1, 5).tolist() == torch.linspace(0, 1, 5).tolist()
    assert f.empty_strided((2, 3), (1, 2)).stride() == (1, 2)
    assert f.zeros(2, requires_grad=True).requires_grad
    assert f.empty(2, layout=None, pin_memory=False).shape == (2,)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        f.zeros(2, dtype=kiln.int64, requires_grad=True)


# --- views and in-place methods --------------------------------------------------------------


def test_views_from_generated_methods_share_storage():
    k = kiln.from_numpy(np.arange(12, dtype=np.float32))
    t = torch.arange(12, dtype=torch.float32)
    kv, tv = k.view(3, 4), t.view(3, 4)
    assert kv.data_ptr() == k.data_ptr()
    assert k.view(size=(4, 3)).shape == (4, 3)
    views = [
        (kv.transpose(0, 1), tv.transpose(0, 1)),
        (kiln.transpose(kv, 1, 0), torch.transpose(tv, 1, 0)),
        (kv.select(1, -1), tv.select(1, -1)),
        (kiln.select(kv, 0, 2), torch.select(tv, 0, 2)),
        (kv.slice(1, 1, None, 2), tv[:, 1::2]),
        (kv.as_strided((2, 2), (1, 4), 1), tv.as_strided((2, 2), (1, 4), 1)),
        (kiln.as_strided(k, (3,), (2,)), torch.as_strided(t, (3,), (2,))),
    ]
    for kview, tview in views:
        assert kview.shape == tview.shape and kview.stride() == tview.stride()
        assert kview.storage_offset() == tview.storage_offset()
        assert kview.tolist() == tview.tolist()
    kv.select(0, 1).fill_(-1)  # writes through the view into the base
    tv.select(0, 1).fill_(-1)
    assert k.tolist() == t.tolist()
    kv.transpose(0, 1).add_(kiln.ones(4, 3))
    tv.transpose(0, 1).add_(torch.ones(4, 3))
    assert k.tolist() == t.tolist()


def test_in_place_methods_return_self():
    k = kiln.ones(2, 3)
    assert k.fill_(2.5) is k and k.tolist() == [[2.5] * 3] * 2
    assert k.zero_() is k and k.tolist() == [[0.0] * 3] * 2
    src = kiln.from_numpy(np.arange(6, dtype=np.int64).reshape(2, 3))
    assert k.copy_(src) is k and k.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert kiln.fill_(k, 1) is k and kiln.zero_(k) is k
    v = k._version
    k.add_(kiln.ones(3))
    assert k._version > v


def test_bindings_release_the_gil():
    # Several threads calling kiln ops at once finish with the right values.
    a = kiln.ones(256, 256)
    results = [None] * 4

    def work(i):
        out = a
        for _ in range(20):
            out = kiln.add(out, a)
        results[i] = out.numpy()[0, 0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == [21.0] * 4
