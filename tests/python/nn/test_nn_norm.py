"""layer_norm and rms_norm against torch: normalized shapes, optional weight
and bias, eps, dtypes, empty and non-contiguous inputs, gradients, gradcheck, errors."""

import pytest
import torch
import torch.nn.functional as TF

import kiln
from nn_compare import FLOATS, REDUCED, F, close, grad_pair, pair
from torch_compare import assert_same_error

CASES = [((4, 10), (10,)), ((2, 3, 37), (37,)), ((2, 3, 4, 5), (4, 5)), ((5,), (5,)), ((3, 1), (1,)),
         ((2, 300), (300,))]


def tol(dtype):
    return {"rtol": 2e-2, "atol": 2e-2} if dtype in REDUCED else {}


@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("shape,normalized", CASES)
@pytest.mark.parametrize("affine", ["none", "weight", "both"])
def test_layer_norm(dtype, shape, normalized, affine):
    k, t = pair(shape, dtype, requires_grad=True)
    kw, tw = pair(normalized, dtype, requires_grad=True, seed=2) if affine != "none" else (None, None)
    kb, tb = pair(normalized, dtype, requires_grad=True, seed=3) if affine == "both" else (None, None)
    ko = F.layer_norm(k, list(normalized), kw, kb, 1e-5)
    to = TF.layer_norm(t, normalized, tw, tb, 1e-5)
    close(ko, to, **tol(dtype))
    grad_pair(ko, to)
    close(k.grad, t.grad, **tol(dtype))
    if kw is not None:
        close(kw.grad, tw.grad, **tol(dtype))
    if kb is not None:
        close(kb.grad, tb.grad, **tol(dtype))


def test_native_layer_norm_statistics():
    k, t = pair((3, 4, 6))
    for kv, tv in zip(F.native_layer_norm(k, [6], None, None, 1e-3), torch.native_layer_norm(t, [6], None, None, 1e-3)):
        close(kv, tv)


@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("shape,normalized", CASES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm(dtype, shape, normalized, weighted, eps):
    k, t = pair(shape, dtype, requires_grad=True)
    kw, tw = pair(normalized, dtype, requires_grad=True, seed=2) if weighted else (None, None)
    ko = F.rms_norm(k, list(normalized), kw, eps)
    to = TF.rms_norm(t, normalized, tw, eps)
    close(ko, to, **tol(dtype))
    grad_pair(ko, to)
    close(k.grad, t.grad, **tol(dtype))
    if kw is not None:
        close(kw.grad, tw.grad, **tol(dtype))


def test_noncontiguous_and_empty():
    k, t = pair((6, 5), noncontiguous=True)
    close(F.layer_norm(k, [5]), TF.layer_norm(t, (5,)))
    close(F.rms_norm(k, [5]), TF.rms_norm(t, (5,)))
    k, t = pair((0, 5), requires_grad=True)
    ko, to = F.layer_norm(k, [5]), TF.layer_norm(t, (5,))
    close(ko, to)
    grad_pair(ko, to)
    close(k.grad, t.grad)


def test_gradcheck():
    k, _ = pair((3, 2, 5), "float64", requires_grad=True)
    kw, _ = pair((5,), "float64", requires_grad=True, seed=4)
    kb, _ = pair((5,), "float64", requires_grad=True, seed=5)
    assert kiln.autograd.gradcheck(lambda x, w, b: F.layer_norm(x, [5], w, b, 1e-5), (k, kw, kb))
    assert kiln.autograd.gradcheck(lambda x: F.layer_norm(x, [2, 5]), (k,))
    assert kiln.autograd.gradcheck(lambda x, w: F.rms_norm(x, [5], w, 1e-6), (k, kw))


def test_errors():
    k, t = pair((3, 4))
    assert_same_error(lambda: F.layer_norm(k, [5]), lambda: TF.layer_norm(t, (5,)))
    kw, tw = pair((3,))
    assert_same_error(lambda: F.layer_norm(k, [4], kw), lambda: TF.layer_norm(t, (4,), tw))
    assert_same_error(lambda: F.layer_norm(k, [4], None, kw), lambda: TF.layer_norm(t, (4,), None, tw))


# --- batch_norm, group_norm (the C++ ops native_batch_norm / native_group_norm) -----------

BN_SHAPES = [(8, 3), (4, 3, 10), (2, 5, 4, 6), (3, 2, 2, 3, 4), (2, 4, 37)]


def stat_pair(c, dtype="float32", seed=10):
    km, tm = pair((c,), dtype, seed=seed)
    kv, tv = pair((c,), dtype, low=0.5, high=2.0, seed=seed + 1)
    return km, tm, kv, tv


@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("shape", BN_SHAPES)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [False, True])
def test_batch_norm(dtype, shape, training, affine):
    c = shape[1]
    k, t = pair(shape, dtype, requires_grad=True)
    kw, tw = pair((c,), dtype, requires_grad=True, seed=2) if affine else (None, None)
    kb, tb = pair((c,), dtype, requires_grad=True, seed=3) if affine else (None, None)
    km, tm, kv, tv = stat_pair(c, dtype)
    ko = F.batch_norm(k, kw, kb, km, kv, training, 0.2, 1e-5, False)
    to = torch.batch_norm(t, tw, tb, tm, tv, training, 0.2, 1e-5, False)
    close(ko, to, **tol(dtype))
    close(km, tm, **tol(dtype))  # running statistics updated (training) or left alone (eval)
    close(kv, tv, **tol(dtype))
    grad_pair(ko, to)
    close(k.grad, t.grad, **tol(dtype))
    if affine:
        close(kw.grad, tw.grad, **tol(dtype))
        close(kb.grad, tb.grad, **tol(dtype))


def test_native_batch_norm_outputs():
    k, t = pair((6, 4, 5))
    km, tm, kv, tv = stat_pair(4)
    for training in (True, False):
        kr = F.native_batch_norm(k, None, None, km, kv, training, 0.1, 1e-3)
        tr = torch.native_batch_norm(t, None, None, tm, tv, training, 0.1, 1e-3)
        for kx, tx in zip(kr, tr):
            close(kx, tx)
    # eval mode needs running statistics (torch's native_batch_norm crashes here; batch_norm raises)
    assert_same_error(lambda: F.batch_norm(k, None, None, None, None, False, 0.1, 1e-5, False),
                      lambda: torch.batch_norm(t, None, None, None, None, False, 0.1, 1e-5, False))


def test_batch_norm_noncontiguous_and_mixed_stats():
    k, t = pair((5, 3, 4), noncontiguous=True, requires_grad=True)
    km, tm, kv, tv = stat_pair(3, "float32")
    ko = F.batch_norm(k, None, None, km, kv, True, 0.1, 1e-5, False)
    to = torch.batch_norm(t, None, None, tm, tv, True, 0.1, 1e-5, False)
    close(ko, to)
    grad_pair(ko, to)
    close(k.grad, t.grad)
    # float16 input with float32 running statistics (nn.BatchNorm under autocast-like use)
    k, t = pair((6, 3), "float16")
    ko = F.batch_norm(k, None, None, km, kv, True, 0.1, 1e-5, False)
    to = torch.batch_norm(t, None, None, tm, tv, True, 0.1, 1e-5, False)
    close(ko, to, rtol=2e-2, atol=2e-2)
    close(km, tm)


@pytest.mark.parametrize("norm", ["batch", "group"])
def test_reduced_input_float32_parameters(norm):
    k, t = pair((4, 6, 5), "bfloat16", requires_grad=True)
    kw, tw = pair((6,), requires_grad=True, seed=2)
    kb, tb = pair((6,), requires_grad=True, seed=3)
    if norm == "batch":
        km, tm, kv, tv = stat_pair(6)
        ko = kiln.nn.functional.batch_norm(k, km, kv, kw, kb, True)
        to = TF.batch_norm(t, tm, tv, tw, tb, True)
    else:
        ko, to = kiln.nn.functional.group_norm(k, 3, kw, kb), TF.group_norm(t, 3, tw, tb)
    close(ko, to, rtol=2e-2, atol=2e-2)
    grad_pair(ko, to)
    close(k.grad, t.grad, rtol=2e-2, atol=5e-2)
    close(kw.grad, tw.grad, rtol=2e-2, atol=5e-2)  # float32, as the parameter
    close(kb.grad, tb.grad, rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("module", ["BatchNorm1d", "BatchNorm2d"])
def test_batch_norm_modules(module):
    shape = (6, 4) if module == "BatchNorm1d" else (3, 4, 5, 5)
    km, tm = getattr(kiln.nn, module)(4, momentum=0.3), getattr(torch.nn, module)(4, momentum=0.3)
    for step in range(3):
        k, t = pair(shape, seed=step)
        close(km(k), tm(t).detach(), rtol=1e-5, atol=1e-5)
    close(km.running_mean, tm.running_mean)
    close(km.running_var, tm.running_var)
    assert int(km.num_batches_tracked.item()) == int(tm.num_batches_tracked.item())
    km.eval()
    tm.eval()
    k, t = pair(shape, seed=9)
    close(km(k), tm(t).detach(), rtol=1e-5, atol=1e-5)


GN_CASES = [((2, 6, 5), 3), ((4, 4), 2), ((2, 8, 3, 3), 8), ((3, 6, 2, 2, 2), 1), ((1, 4, 100), 2),
            ((3, 12, 7, 9), 4)]


@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("shape,groups", GN_CASES)
@pytest.mark.parametrize("affine", [False, True])
def test_group_norm(dtype, shape, groups, affine):
    c = shape[1]
    k, t = pair(shape, dtype, requires_grad=True)
    kw, tw = pair((c,), dtype, requires_grad=True, seed=2) if affine else (None, None)
    kb, tb = pair((c,), dtype, requires_grad=True, seed=3) if affine else (None, None)
    ko = kiln.nn.functional.group_norm(k, groups, kw, kb, 1e-5)
    to = TF.group_norm(t, groups, tw, tb, 1e-5)
    close(ko, to, **tol(dtype))
    grad_pair(ko, to)
    close(k.grad, t.grad, **tol(dtype))
    if affine:
        close(kw.grad, tw.grad, **tol(dtype))
        close(kb.grad, tb.grad, **tol(dtype))


def test_group_norm_many_tasks():
    # 24 (sample, group) rows of 3 x 1600 elements: several tasks of the fused
    # forward and input-gradient kernels on each of 2 threads.
    previous = kiln.get_num_threads()
    kiln.set_num_threads(2)
    try:
        k, t = pair((8, 9, 40, 40), "float32", requires_grad=True)
        kw, tw = pair((9,), "float32", requires_grad=True, seed=2)
        kb, tb = pair((9,), "float32", requires_grad=True, seed=3)
        ko, to = kiln.nn.functional.group_norm(k, 3, kw, kb), TF.group_norm(t, 3, tw, tb)
        close(ko, to, rtol=1e-5, atol=1e-5)
        grad_pair(ko, to)
        close(k.grad, t.grad, rtol=1e-5, atol=1e-5)
        # sums over 12800 elements: torch's float32 accumulation differs by a few ulps
        close(kw.grad, tw.grad, rtol=1e-5, atol=1e-3)
        close(kb.grad, tb.grad, rtol=1e-5, atol=1e-3)
    finally:
        kiln.set_num_threads(previous)


def test_native_group_norm_outputs_and_module():
    k, t = pair((3, 6, 4), noncontiguous=True)
    kr = F.native_group_norm(k, None, None, 3, 6, 4, 2, 1e-5)
    tr = torch.native_group_norm(t.contiguous(), None, None, 3, 6, 4, 2, 1e-5)  # torch's needs contiguous
    for kx, tx in zip(kr, tr):
        close(kx, tx)
    km, tm = kiln.nn.GroupNorm(2, 6), torch.nn.GroupNorm(2, 6)
    k, t = pair((3, 6, 4))
    close(km(k), tm(t).detach())


def test_norm_empty_batch():
    k, t = pair((0, 4, 3), requires_grad=True)
    ko, to = kiln.nn.functional.group_norm(k, 2), TF.group_norm(t, 2)
    close(ko, to)


def test_batch_norm_group_norm_gradcheck():
    k, _ = pair((4, 3, 2), "float64", requires_grad=True)
    kw, _ = pair((3,), "float64", requires_grad=True, seed=4)
    kb, _ = pair((3,), "float64", requires_grad=True, seed=5)
    assert kiln.autograd.gradcheck(lambda x, w, b: F.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
                                   (k, kw, kb))
    km, _, kv, _ = stat_pair(3, "float64")
    assert kiln.autograd.gradcheck(lambda x, w, b: F.batch_norm(x, w, b, km, kv, False, 0.1, 1e-5, False),
                                   (k, kw, kb))
    k6, _ = pair((2, 6, 3), "float64", requires_grad=True)
    w6, _ = pair((6,), "float64", requires_grad=True, seed=6)
    b6, _ = pair((6,), "float64", requires_grad=True, seed=7)
    assert kiln.autograd.gradcheck(lambda x, w, b: kiln.nn.functional.group_norm(x, 3, w, b), (k6, w6, b6))


def test_batch_norm_group_norm_errors():
    k, t = pair((3, 4, 5))
    kw, tw = pair((3,))
    assert_same_error(lambda: F.batch_norm(k, kw, None, None, None, True, 0.1, 1e-5, False),
                      lambda: torch.batch_norm(t, tw, None, None, None, True, 0.1, 1e-5, False), message=False)
    km, tm = pair((5,))
    assert_same_error(lambda: F.batch_norm(k, None, None, km, km, False, 0.1, 1e-5, False),
                      lambda: torch.batch_norm(t, None, None, tm, tm, False, 0.1, 1e-5, False), message=False)
    assert_same_error(lambda: kiln.nn.functional.group_norm(k, 3), lambda: TF.group_norm(t, 3))
    assert_same_error(lambda: kiln.nn.functional.group_norm(k, 2, kw), lambda: TF.group_norm(t, 2, tw),
                      message=False)
    assert_same_error(lambda: kiln.nn.functional.batch_norm(kiln.ones(1, 3), None, None, training=True),
                      lambda: TF.batch_norm(torch.ones(1, 3), None, None, training=True))


@pytest.mark.parametrize("shape,groups", [((1, 1, 1, 1), 1), ((1, 2, 1), 2), ((2, 2, 1), 4), ((1, 2), 2)])
def test_group_norm_of_one_value_per_group_is_refused_as_torch(shape, groups):
    # torch's _verify_batch_size over [N * C // G, G, *spatial], before the divisibility check
    assert_same_error(lambda: kiln.nn.functional.group_norm(kiln.ones(shape), groups),
                      lambda: TF.group_norm(torch.ones(shape), groups))


def test_norm_backward_ops_check_their_inputs():
    # The backward ops index grad_out and the saved statistics: mismatched sizes raise, never read out of bounds.
    k, _ = pair((4, 3, 5))
    _, mean, invstd = F.native_batch_norm(k, None, None, None, None, True, 0.1, 1e-5)
    bad_grad, _ = pair((4, 3, 4))
    with pytest.raises(RuntimeError, match="expected grad_out of the input's size"):
        F._batch_norm_backward_input(bad_grad, k, None, None, None, mean, invstd, True, 1e-5)
    with pytest.raises(RuntimeError, match="expected save_mean with 3 elements"):
        F._batch_norm_backward_weight(k, k, None, None, mean[:2], invstd, True, 1e-5)
    _, gmean, grstd = F.native_group_norm(k, None, None, 4, 3, 5, 3, 1e-5)
    with pytest.raises(RuntimeError, match="expected rstd with 12 elements"):
        F._group_norm_backward_input(k, k, None, gmean, grstd[:2], 3)
    with pytest.raises(RuntimeError, match="expected grad_out of the input's size"):
        F._group_norm_backward_weight(bad_grad, k, gmean, grstd, 3)
