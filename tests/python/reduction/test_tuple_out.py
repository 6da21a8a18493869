"""out=(values, indices) for the ops returning two tensors (Note [Tuple out= forms]),
compared with torch: values, dtypes, shapes, identity of the returned tensors, errors."""

import warnings

import pytest
import torch

import kiln

CASES = [  # (name, call taking (module, input, out), dtypes of the two outs for a float input)
    ("sort", lambda m, x, out: m.sort(x, 1, out=out), "long"),
    ("sort_desc", lambda m, x, out: m.sort(x, 0, True, out=out), "long"),
    ("sort_stable", lambda m, x, out: m.sort(x, stable=True, dim=1, out=out), "long"),
    ("topk", lambda m, x, out: m.topk(x, 2, out=out), "long"),
    ("max", lambda m, x, out: m.max(x, 1, out=out), "long"),
    ("max_keepdim", lambda m, x, out: m.max(x, 0, True, out=out), "long"),
    ("min", lambda m, x, out: m.min(x, 1, out=out), "long"),
    ("aminmax", lambda m, x, out: m.aminmax(x, dim=1, out=out), "same"),
    ("aminmax_all", lambda m, x, out: m.aminmax(x, out=out), "same"),
]


def outs(m, dtype, kind, shape=(0,)):
    second = m.long if kind == "long" else dtype
    return (m.empty(shape, dtype=dtype), m.empty(shape, dtype=second))


@pytest.mark.parametrize("name,call,kind", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_and_identity(name, call, kind, dtype):
    t = torch.randn(3, 4, dtype=getattr(torch, dtype))
    k = kiln.tensor(t.numpy())
    tout, kout = outs(torch, t.dtype, kind), outs(kiln, getattr(kiln, dtype), kind)
    tr, kr = call(torch, t, tout), call(kiln, k, kout)
    assert type(kr).__name__ == type(tr).__name__  # torch.return_types.sort_out, ...
    assert kr[0] is kout[0] and kr[1] is kout[1]
    for a, b in zip(tr, kr):
        assert tuple(a.shape) == tuple(b.shape) and str(a.dtype)[6:] == str(b.dtype)[5:]
        assert torch.equal(a, torch.from_numpy(b.numpy()))


@pytest.mark.parametrize("name,call,kind", CASES, ids=[c[0] for c in CASES])
def test_wrong_shaped_outs_resize_with_torchs_warning(name, call, kind):
    t = torch.randn(3, 4)
    k = kiln.tensor(t.numpy())
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        call(torch, t, outs(torch, torch.float32, kind, (7,)))
    with warnings.catch_warnings(record=True) as kw:
        warnings.simplefilter("always")
        kr = call(kiln, k, outs(kiln, kiln.float32, kind, (7,)))
    assert len(kw) == len(tw) == 2
    assert str(kw[0].message).split(" (Triggered")[0] == str(tw[0].message).split(" (Triggered")[0]
    assert [tuple(r.shape) for r in kr] == [tuple(r.shape) for r in call(torch, t, outs(torch, torch.float32, kind))]


def errors(call_t, call_k):
    with pytest.raises(Exception) as te:
        call_t()
    with pytest.raises(Exception) as ke:
        call_k()
    assert type(ke.value).__name__ == type(te.value).__name__
    assert str(ke.value) == str(te.value)


@pytest.mark.parametrize("name,call,kind", CASES, ids=[c[0] for c in CASES])
def test_wrong_dtypes(name, call, kind):
    t = torch.randn(3, 4)
    k = kiln.tensor(t.numpy())
    errors(lambda: call(torch, t, (torch.empty(0, dtype=torch.float64), torch.empty(0, dtype=torch.long))),
           lambda: call(kiln, k, (kiln.empty(0, dtype=kiln.float64), kiln.empty(0, dtype=kiln.long))))
    second_t = torch.int32 if kind == "long" else torch.long
    second_k = kiln.int32 if kind == "long" else kiln.long
    errors(lambda: call(torch, t, (torch.empty(0), torch.empty(0, dtype=second_t))),
           lambda: call(kiln, k, (kiln.empty(0), kiln.empty(0, dtype=second_k))))


@pytest.mark.parametrize("name,call,kind", CASES, ids=[c[0] for c in CASES])
def test_requires_grad_and_tuple_arity(name, call, kind):
    t = torch.randn(3, 4, requires_grad=True)
    k = kiln.tensor(t.detach().numpy(), requires_grad=True)
    errors(lambda: call(torch, t, outs(torch, torch.float32, kind)), lambda: call(kiln, k, outs(kiln, kiln.float32, kind)))
    errors(lambda: call(torch, t.detach(), outs(torch, torch.float32, kind) + (torch.empty(0),)),
           lambda: call(kiln, k.detach(), outs(kiln, kiln.float32, kind) + (kiln.empty(0),)))


def test_a_single_tensor_is_not_a_tuple_out():
    with pytest.raises(TypeError, match="tuple of Tensors out = None"):
        kiln.sort(kiln.randn(3), out=kiln.empty(0))


def test_out_aliasing_the_input_gives_the_right_result():
    t = torch.randn(6)
    k = kiln.tensor(t.numpy())
    kr = kiln.sort(k, out=(k, kiln.empty(0, dtype=kiln.long)))
    assert kr.values is k
    assert torch.equal(torch.from_numpy(k.numpy()), torch.sort(t).values)


def test_outs_sharing_memory_raise_naming_the_op():
    a = kiln.empty(0, dtype=kiln.long)
    with pytest.raises(RuntimeError, match=r"sort\(\): the out tensors values and indices share memory"):
        kiln.sort(kiln.arange(5), out=(a, a))
    b = kiln.empty(6, dtype=kiln.long)
    r = kiln.sort(kiln.arange(3), out=(b[:3], b[3:]))  # disjoint views of one buffer are fine
    assert b.tolist() == [0, 1, 2, 0, 1, 2] and r.values.tolist() == [0, 1, 2]
