"""In-place ops through views under autograd (PyTorch's CopySlices), compared
with torch: gradients, grad_fn names, double backward, version checks across
aliases, and the errors torch raises for the views it refuses to modify."""

import math

import numpy as np
import pytest
import torch

import kiln

RNG = np.random.default_rng(11)
LEAF = RNG.uniform(-1.5, 1.5, size=(4, 4))
OTHER = RNG.uniform(0.5, 1.5, size=(4,))


def short(name):
    """torch says 'torch::autograd::CopySlices' where kiln says 'CopySlices'."""
    return name.split("::")[-1]


# name -> fn(lib, leaf, other) -> (output, {label: tensor whose grad_fn name to compare})
def _mul_row(lib, a, o):
    x = a.clone()
    x[0] *= 2
    return x * x, {"x": x}


def _add_column(lib, a, o):
    x = a.clone()
    v = x[:, 1]
    v.add_(o)
    return x.sin() + 0, {"x": x, "v": v}


def _mul_transposed(lib, a, o):
    x = a * 1.5
    x.t().mul_(x.detach() + 1)
    return x * a, {"x": x}


def _setitem_on_flat_view(lib, a, o):
    x = a.clone()
    v = x.view(-1)
    v[3] = 5
    v[5] = o[1] * 3
    return x * a, {"x": x, "v": v}


def _zero_diagonal(lib, a, o):
    x = a * 2
    d = x.diagonal()
    d.zero_()
    return x * a, {"x": x, "d": d}


def _chained_views(lib, a, o):
    x = a.clone()
    w = x[1:]
    v = w[:, 1:3].transpose(0, 1)
    v.mul_(o[:2].unsqueeze(1))
    return x * x, {"x": x, "w": w, "v": v}


def _use_base_and_view(lib, a, o):
    x = a * 2
    v = x[2]
    v.mul_(o)
    return (x * 3).sum() + (v * v).sum() * 0.5, {"x": x, "v": v}


def _view_used_before_and_after(lib, a, o):
    x = a * 1
    v = x[1:3]
    before = v * 2       # v's old history, from before the write below
    x[1, 2] = o[0]
    after = v * 3        # v's history regenerated over x's new one
    return before.sum() + after.sum() + (x * x).sum(), {"x": x, "v": v}


def _write_into_plain_tensor(lib, a, o):
    out = lib.zeros(4, 4, dtype=lib.float64)
    out[1] = a[0] * o
    out[:, 2] += a[:, 3]
    return out * 2, {"out": out}


def _rnn_style_loop(lib, a, o):
    h = lib.zeros(4, 4, dtype=lib.float64)
    h[0] = o
    for t in range(1, 4):
        h[t] = (h[t - 1] + a[t]).tanh()  # reads h[t - 1] (saving no alias of h), then writes h
    return h.sum(0), {"h": h}


def _inplace_on_base_then_view(lib, a, o):
    x = a.clone()
    v = x[:, :2]
    x.mul_(3)
    v.add_(o[:2])
    return x * v.sum(), {"x": x, "v": v}


def _slice_step_and_select(lib, a, o):
    x = a + 0
    x[::2, 1].mul_(o[:2])
    x[1:, :][0].sub_(o)
    return x.cos(), {"x": x}


def _unsqueeze_expand_copy(lib, a, o):
    x = a.clone()
    x[1:3] = o  # a broadcast copy (as_strided of o with a 0 stride)
    return x * a, {"x": x}


CASES = {f.__name__[1:]: f for f in [_mul_row, _add_column, _mul_transposed, _setitem_on_flat_view, _zero_diagonal,
                                      _chained_views, _use_base_and_view, _view_used_before_and_after,
                                      _write_into_plain_tensor, _rnn_style_loop, _inplace_on_base_then_view,
                                      _slice_step_and_select, _unsqueeze_expand_copy]}


def run(lib, case, create_graph=False):
    a = lib.tensor(LEAF, dtype=lib.float64, requires_grad=True)
    o = lib.tensor(OTHER, dtype=lib.float64, requires_grad=True)
    out, named = CASES[case](lib, a, o)
    seed = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)), dtype=lib.float64)
    grads = lib.autograd.grad(out, [a, o], seed, create_graph=create_graph, allow_unused=True)
    names = {k: (short(t.grad_fn.name()) if t.grad_fn is not None else None) for k, t in named.items()}
    return out, grads, names, (a, o)


def as_np(t, like):
    return np.zeros_like(like) if t is None else t.detach().numpy()


@pytest.mark.parametrize("case", list(CASES))
def test_gradients_and_grad_fn_names_match_torch(case):
    k_out, k_grads, k_names, _ = run(kiln, case)
    t_out, t_grads, t_names, _ = run(torch, case)
    np.testing.assert_allclose(k_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    for kg, tg, like in zip(k_grads, t_grads, (LEAF, OTHER)):
        np.testing.assert_allclose(as_np(kg, like), as_np(tg, like), rtol=1e-10, atol=1e-12)
    assert k_names == t_names


@pytest.mark.parametrize("case", list(CASES))
def test_double_backward_through_copy_slices_matches_torch(case):
    results = []
    for lib in (kiln, torch):
        _, grads, _, inputs = run(lib, case, create_graph=True)
        # d/dinputs of sum(grad_a * c + grad_o): a second backward through the first one's graph
        c = lib.tensor(np.arange(16.0).reshape(4, 4) / 16, dtype=lib.float64)
        total = (grads[0] * c).sum() + (grads[1].sum() if grads[1] is not None else 0)
        second = lib.autograd.grad(total, inputs, allow_unused=True, materialize_grads=True)
        results.append([g.detach().numpy() for g in second])
    for kg, tg in zip(*results):
        np.testing.assert_allclose(kg, tg, rtol=1e-10, atol=1e-12)


def test_retain_graph_backward_twice_through_copy_slices():
    grads = []
    for lib in (kiln, torch):
        a = lib.tensor(LEAF, dtype=lib.float64, requires_grad=True)
        x = a * 2
        x[1:3, 1].mul_(a[0, :2])
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        grads.append(a.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_second_backward_without_retain_graph_raises():
    a = kiln.tensor(LEAF, dtype=kiln.float64, requires_grad=True)
    x = a * 2
    x[0].mul_(a[1].detach() + 1)
    y = (x * 1).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_version_counter_is_shared_between_base_and_views():
    x = kiln.zeros(3, 4)
    v = x[1]
    w = x.t()[2]
    before = (x._version, v._version, w._version)
    v.add_(1)
    assert x._version == v._version == w._version == before[0] + 1
    x.mul_(2)
    assert x._version == v._version == w._version == before[0] + 2


@pytest.mark.parametrize("write", ["through view", "through base"])
def test_saved_tensor_version_check_fires_across_aliases_as_torch(write):
    for lib in (kiln, torch):
        a = lib.tensor(LEAF, dtype=lib.float64, requires_grad=True)
        x = a.clone()
        v = x[0]
        y = (x * x).sum() if write == "through view" else (v * v).sum()  # saves x (or v)
        if write == "through view":
            v.mul_(2)
        else:
            x.add_(1)
        with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient computation has been "
                           r"modified by an inplace operation: \[\w+\.DoubleTensor \[4(, 4)?\]\]"):
            y.backward()


def test_grad_fn_names_match_torch_after_writes():
    names = []
    for lib in (kiln, torch):
        a = lib.tensor(LEAF, dtype=lib.float64, requires_grad=True)
        x = a.clone()
        v = x[0]
        seen = [short(v.grad_fn.name())]            # SelectBackward0
        v.mul_(2)
        seen += [short(x.grad_fn.name()), short(v.grad_fn.name())]  # CopySlices, AsStridedBackward0
        u = x[1:]
        x.add_(a)                                   # u's history becomes stale
        seen += [short(x.grad_fn.name()), short(u.grad_fn.name())]  # AddBackward0, AsStridedBackward0
        s = lib.as_strided(a, (2, 2), (1, 4), 1)
        seen.append(short(s.grad_fn.name()))
        names.append(seen)
    assert names[0] == names[1]
    assert names[0][1:3] == ["CopySlices", "AsStridedBackward0"]


# --- as_strided's own gradient --------------------------------------------------

AS_STRIDED = {
    "transpose-like": ((4, 4), (3, 4), (1, 4), 0),
    "window with offset": ((4, 4), (2, 3), (4, 1), 5),
    "overlapping windows": ((4, 4), (3, 3), (1, 1), 2),  # elements read twice: gradients add up
    "broadcast row": ((4, 4), (3, 4), (0, 1), 4),
    "every other": ((4, 4), (8,), (2,), 0),
}


@pytest.mark.parametrize("name", list(AS_STRIDED))
def test_as_strided_backward_matches_torch(name):
    shape, size, stride, offset = AS_STRIDED[name]
    grads = []
    for lib in (kiln, torch):
        a = lib.tensor(LEAF.reshape(shape), dtype=lib.float64, requires_grad=True)
        y = lib.as_strided(a * 1, size, stride, offset)
        seed = lib.tensor(np.linspace(-2, 3, int(np.prod(size))).reshape(size), dtype=lib.float64,
                          requires_grad=True)
        (g,) = lib.autograd.grad(y, a, seed, create_graph=True)
        (gg,) = lib.autograd.grad((g * g * a).sum(), seed)  # through as_strided_backward itself
        grads.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-12)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-12)


def test_as_strided_gradcheck():
    a = kiln.tensor(LEAF, dtype=kiln.float64, requires_grad=True)
    assert kiln.autograd.gradcheck(lambda t: kiln.as_strided(t, (3, 3), (1, 1), 2) * 2, (a,))


def test_as_strided_of_an_overlapping_input_raises_a_clear_error():
    a = kiln.tensor(OTHER, dtype=kiln.float64, requires_grad=True)
    e = a.expand(3, 4)  # every row aliases a
    y = kiln.as_strided(e, (2, 2), (1, 1), 0)
    with pytest.raises(RuntimeError, match="as_strided_backward.*overlap"):
        y.sum().backward()


# --- errors, as torch raises them ------------------------------------------------

def _view_of_leaf(lib):
    leaf = lib.ones(3, 4, requires_grad=True)
    leaf[0].mul_(2)


def _reshape_view_of_leaf(lib):
    leaf = lib.ones(3, 4, requires_grad=True)
    leaf.view(-1).add_(1)


def _unbind_output(lib):
    x = lib.ones(3, 4, requires_grad=True).clone()
    x.unbind()[1].mul_(2)


def _split_output(lib):
    x = lib.ones(3, 4, requires_grad=True).clone()
    x.split(2)[0].add_(1)


def _chunk_output(lib):
    x = lib.ones(4, 4, requires_grad=True).clone()
    x.chunk(2, 1)[1].add_(1)


def _view_of_unbind_output(lib):
    x = lib.ones(3, 4, requires_grad=True).clone()
    x.unbind(1)[2][1:].mul_(2)


def _no_grad_view(lib):
    x = lib.ones(3, 4, requires_grad=True).clone()
    with lib.no_grad():
        v = x[0]
    v.mul_(2)


def _no_grad_view_of_plain_written_with_grad(lib):
    x = lib.zeros(3, 4)
    with lib.no_grad():
        v = x[0]
    v.copy_(lib.ones(4, requires_grad=True) * 2)


def _overlapping_view(lib):
    x = lib.ones(3, requires_grad=True).clone()
    x.expand(2, 3).mul_(2)


ERRORS = {
    "view of a leaf": (_view_of_leaf, r"^a view of a leaf Variable that requires grad is being used in an in-place "
                       r"operation\.$"),
    "reshape view of a leaf": (_reshape_view_of_leaf, r"^a view of a leaf Variable that requires grad"),
    "unbind output": (_unbind_output, r"^Output 1 of Unbind is a view and is being modified inplace\. This view is "
                      r"the output of a function that returns multiple views\. Such functions do not allow the output "
                      r"views to be modified inplace\. You should replace the inplace operation by an out-of-place "
                      r"one\.$"),
    "split output": (_split_output, r"^Output 0 of Split is a view and is being modified inplace"),
    "chunk output": (_chunk_output, r"^Output 1 of Split is a view and is being modified inplace"),
    "view of an unbind output": (_view_of_unbind_output, r"^Output 0 of Slice is a view and is being modified "
                                 r"inplace\. This view is the output of a function that returns multiple views"),
    "no_grad view": (_no_grad_view, r"^A view was created in no_grad mode and is being modified inplace with grad "
                     r"mode enabled\. Given that this use case is ambiguous and error-prone, it is forbidden\."),
    "no_grad view of a plain tensor": (_no_grad_view_of_plain_written_with_grad,
                                       r"^A view was created in no_grad mode and is being modified inplace"),
    "overlapping view": (_overlapping_view, r"^unsupported operation: more than one element of the written-to tensor "
                         r"refers to a single memory location\."),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_refused_in_place_writes_raise_as_torch(name):
    fn, pattern = ERRORS[name]
    for lib in (kiln, torch):
        with pytest.raises(RuntimeError, match=pattern):
            fn(lib)


def test_refused_write_leaves_the_tensor_unchanged():
    x = kiln.ones(3, 4, requires_grad=True).clone()
    parts = x.unbind()
    with pytest.raises(RuntimeError):
        parts[0].mul_(5)
    assert x.detach().numpy().tolist() == np.ones((3, 4)).tolist()
    assert x.grad_fn.name() == "CloneBackward0"


@pytest.mark.parametrize("lib", [kiln, torch], ids=["kiln", "torch"])
def test_allowed_writes_that_torch_allows(lib):
    leaf = lib.ones(3, 4, requires_grad=True)
    with lib.no_grad():
        leaf[0].mul_(2)        # a view of a leaf, in no_grad: an optimizer step
        v = leaf.clone()[1]
        v.add_(1)              # a no_grad view, written in no_grad
    x = leaf.clone()
    with lib.no_grad():
        w = x[0]
    w.detach().zero_()         # a detached alias is not a view under autograd
    x.unbind()[0].detach().mul_(3)
    assert leaf[0, 0].item() == 2.0 and x[0, 0].item() == 0.0


def test_graph_through_a_base_and_its_views_is_freed():
    import gc

    def allocated():
        return kiln.memory_stats()["allocated_bytes.all.current"]

    w = kiln.ones(2, requires_grad=True)
    gc.collect()  # earlier tests' garbage must not be freed during the measurement
    before = allocated()
    out = kiln.zeros(1 << 20)
    v = out[:2]
    out[2:4] = v * w  # MulBackward0 saves v, a view of out, and out's CopySlices holds MulBackward0
    x = kiln.ones(1 << 20, requires_grad=True).clone()
    x[0].mul_(2)
    del out, v, x
    gc.collect()
    assert allocated() - before < (1 << 20)  # no reference cycle keeps the 4 MiB tensors alive


@pytest.mark.parametrize("lib", [kiln, torch], ids=["kiln", "torch"])
def test_base_and_is_view_as_torch(lib):
    x = lib.zeros(3, 4)
    v = x[1:][:, 2]
    assert v._is_view() and v._base is x            # a view of a view records the root
    assert x.t()._base is x and x.unbind()[2]._base is x
    assert not x._is_view() and x._base is None
    assert not x.detach()._is_view() and not x.clone()._is_view()
    assert not x.view(lib.int32)._is_view()         # a dtype view is not a differentiable view


# --- views with no history of their own, compared with torch ---------------------
# Each scenario returns what it observed (requires_grad, grad_fn names, values,
# gradients); an error is observed as its message. kiln and torch must agree.

def _observe(t):
    return (t.requires_grad, short(t.grad_fn.name()) if t.grad_fn is not None else None, t.is_leaf)


def _view_then_base_multiplied(lib):
    w = lib.tensor(LEAF[:3], dtype=lib.float64, requires_grad=True)
    x = lib.zeros(3, 4, dtype=lib.float64)
    v = x[0]  # no history: x does not require grad yet
    before = _observe(v)
    x.add_(1)
    x.mul_(w)  # x gains history in place
    after = _observe(v)
    (v * v).sum().backward()
    return before, after, w.grad.numpy().tolist()


def _view_then_sibling_written(lib):
    w = lib.tensor(OTHER, dtype=lib.float64, requires_grad=True)
    x = lib.ones(3, 4, dtype=lib.float64)
    v, u = x[0], x[:, 1:3]
    x[1].mul_(w)  # through another alias
    out = (v * 2).sum() + (u * u).sum()
    out.backward()
    return _observe(v), _observe(u), w.grad.numpy().tolist()


def _view_of_view_follows(lib):
    w = lib.tensor(OTHER, dtype=lib.float64, requires_grad=True)
    x = lib.ones(3, 4, dtype=lib.float64)
    v = x.t()[1:]
    x[2].copy_(w * 3)
    y = (v.exp()).sum()
    (g,) = lib.autograd.grad(y, w)
    return _observe(v), g.numpy().tolist()


def _requires_grad_on_base_later(lib):
    x = lib.zeros(3, 4, dtype=lib.float64)
    v = x[0]
    x.requires_grad_()
    y = v * v
    return _observe(v), _observe(y)


def _no_grad_view_of_grad_tensor(lib):
    a = lib.tensor(LEAF, dtype=lib.float64, requires_grad=True)
    x = a.clone()
    with lib.no_grad():
        v = x[0]
    y = v * v
    z = v[1:]
    (y.sum() + (x * 1).sum()).backward()  # nothing flows through v
    return _observe(v), _observe(y), _observe(z), a.grad.numpy().tolist()


def _no_grad_view_of_leaf_backward(lib):
    a = lib.tensor(LEAF, dtype=lib.float64, requires_grad=True)
    with lib.no_grad():
        v = a[0]
    (v * 2).sum().backward()  # nothing reaches a: v has no gradient edge
    return _observe(v), a.grad


def _no_grad_view_written_then_used(lib):
    x = lib.tensor(LEAF, dtype=lib.float64, requires_grad=True).clone()
    with lib.no_grad():
        v = x[:2]
    x.mul_(2)
    return v * 2


def _no_grad_view_of_plain_base_after_write(lib):
    x = lib.zeros(4, dtype=lib.float64)
    with lib.no_grad():
        v = x[:2]
    x.mul_(lib.ones(4, dtype=lib.float64, requires_grad=True))
    return v.grad_fn


def _view_of_no_grad_view_modified(lib):
    x = lib.ones(3, 4, dtype=lib.float64, requires_grad=True).clone()
    with lib.no_grad():
        v = x[0]
    v[1:].mul_(2)


def _no_grad_view_modified_in_no_grad(lib):
    x = lib.ones(3, 4, dtype=lib.float64, requires_grad=True).clone()
    with lib.no_grad():
        v = x[0]
        v.mul_(2)
    return x.grad_fn is not None and short(x.grad_fn.name()), v.grad_fn


NO_HISTORY = [_view_then_base_multiplied, _view_then_sibling_written, _view_of_view_follows,
              _requires_grad_on_base_later, _no_grad_view_of_grad_tensor, _no_grad_view_of_leaf_backward,
              _no_grad_view_written_then_used, _no_grad_view_of_plain_base_after_write,
              _view_of_no_grad_view_modified, _no_grad_view_modified_in_no_grad]


def outcome(fn, lib):
    try:
        return ("ok", fn(lib))
    except RuntimeError as e:
        return ("error", str(e))


def normalize(result):
    """Tensors as lists (kiln and torch print them differently)."""
    if isinstance(result, (list, tuple)):
        return type(result)(normalize(r) for r in result)
    if hasattr(result, "detach") and hasattr(result, "numpy"):
        return ("tensor", result.detach().numpy().tolist())
    if hasattr(result, "name") and callable(result.name):
        return ("node", short(result.name()))
    return result


def same(a, b):
    """Equal structure and values, floats to 1e-12 relative (exp may come from another vector-math library)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0) or (math.isnan(a) and math.isnan(b))
    return a == b


@pytest.mark.parametrize("fn", NO_HISTORY, ids=[f.__name__[1:] for f in NO_HISTORY])
def test_views_without_history_behave_as_torch(fn):
    k, t = normalize(outcome(fn, kiln)), normalize(outcome(fn, torch))
    assert same(k, t), (k, t)


def test_no_grad_view_reports_requires_grad_and_refuses_writes():
    x = kiln.ones(3, 4, requires_grad=True).clone()
    with kiln.no_grad():
        v = x[0]
    assert v.requires_grad and v.grad_fn is None and v.is_leaf
    with pytest.raises(RuntimeError, match=r"^A view was created in no_grad mode and is being modified inplace"):
        v.mul_(2)
    with pytest.raises(RuntimeError, match=r"^Output 0 of Slice is a view of a view which was created in no_grad mode"):
        v[1:].add_(1)


# --- outputs of split / unbind / chunk written in place -------------------------

MULTI_OUTPUT_OPS = {
    "split": lambda x: x.split(2)[0],
    "chunk": lambda x: x.chunk(2)[0],
    "unbind": lambda x: x.view(2, 2).unbind()[0],
    "split_with_sizes": lambda x: x.split([1, 3])[1],
    "view of a split output": lambda x: x.split(2)[1][1:],
    "tensor_split": lambda x: x.tensor_split(2)[1],  # slices, not multi-output views: allowed
}


def _multi_output_case(lib, op, view_grad_mode, base_requires_grad, write_grad_mode, operand_requires_grad):
    x = lib.zeros(4, dtype=lib.float64)
    if base_requires_grad:
        x = lib.zeros(4, dtype=lib.float64, requires_grad=True).clone()
    with lib.set_grad_enabled(view_grad_mode):
        p = MULTI_OUTPUT_OPS[op](x)
    operand = lib.ones(tuple(p.shape), dtype=lib.float64, requires_grad=operand_requires_grad)
    with lib.set_grad_enabled(write_grad_mode):
        p.add_(operand)
    return p.requires_grad, p.grad_fn, x.grad_fn


@pytest.mark.parametrize("op", list(MULTI_OUTPUT_OPS))
@pytest.mark.parametrize("view_grad_mode", [True, False], ids=["view-grad", "view-nograd"])
@pytest.mark.parametrize("base_requires_grad", [True, False], ids=["base-rg", "base-plain"])
@pytest.mark.parametrize("write_grad_mode", [True, False], ids=["write-grad", "write-nograd"])
@pytest.mark.parametrize("operand_requires_grad", [True, False], ids=["operand-rg", "operand-plain"])
def test_multi_output_views_written_in_place_as_torch(op, view_grad_mode, base_requires_grad, write_grad_mode,
                                                      operand_requires_grad):
    args = (op, view_grad_mode, base_requires_grad, write_grad_mode, operand_requires_grad)
    k = normalize(outcome(lambda lib: _multi_output_case(lib, *args), kiln))
    t = normalize(outcome(lambda lib: _multi_output_case(lib, *args), torch))
    assert k == t


def test_multi_output_view_of_a_plain_tensor_error_text():
    x = kiln.zeros(4)
    p = x.split(2)[0]
    with pytest.raises(RuntimeError, match=r"^A view was created in no_grad mode and is being modified inplace with "
                       r"grad mode enabled\. This view is the output of a function that returns multiple views\."):
        p.add_(kiln.ones(2, requires_grad=True))
    p.add_(1)  # nothing requires grad: allowed
    assert x.tolist() == [1.0, 1.0, 0.0, 0.0]


def test_multi_output_view_history_after_its_base_was_written_raises_as_torch():
    for lib in (kiln, torch):
        x = lib.zeros(4, requires_grad=True).clone()
        p = x.split(2)[0]
        x.mul_(2)
        with pytest.raises(RuntimeError, match=r"^Output 0 of Split is a view and its base or another view of its "
                           r"base has been modified inplace\. This view is the output of a function that returns "
                           r"multiple views\."):
            p.grad_fn


# --- hooks and retain_grad across a view's regeneration -------------------------

def _hooks_case(lib, write, retain, use_old):
    a = lib.tensor(LEAF[:2, :3], dtype=lib.float64, requires_grad=True)
    x = a.clone()
    v = x[0]
    log = []
    if retain:
        v.retain_grad()
    else:
        v.register_hook(lambda g: log.append(g.detach().numpy().tolist()))
    old = v * 5 if use_old else None
    if write == "base":
        x.mul_(2)
    elif write == "view":
        v.mul_(3)
    elif write == "sibling":
        x[1].add_(1)
    out = (v * v).sum() + (old.sum() if use_old else 0)
    out.backward()
    return (v.grad.numpy().tolist() if retain else log), a.grad.numpy().tolist(), short(v.grad_fn.name())


@pytest.mark.parametrize("write", ["base", "view", "sibling", "none"])
@pytest.mark.parametrize("retain", [True, False], ids=["retain_grad", "register_hook"])
@pytest.mark.parametrize("use_old", [True, False], ids=["old-history-used", "old-history-unused"])
def test_view_hooks_and_retain_grad_across_regeneration_as_torch(write, retain, use_old):
    assert _hooks_case(kiln, write, retain, use_old) == _hooks_case(torch, write, retain, use_old)


@pytest.mark.parametrize("lib", [kiln, torch], ids=["kiln", "torch"])
def test_retain_grad_follows_an_in_place_op_on_a_non_view(lib):
    a = lib.ones(3, dtype=lib.float64, requires_grad=True)
    x = a.clone()
    x.retain_grad()
    y = x * 5
    x.mul_(2)
    (y.sum() + (x * 3).sum()).backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]  # the gradient of x's latest version only
    assert a.grad.tolist() == [11.0, 11.0, 11.0]
