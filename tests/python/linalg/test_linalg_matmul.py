"""Matrix products on the BLAS, against torch: values, layouts, dtypes, errors, gradients."""

import re

import numpy as np
import pytest
import torch

import kiln

RNG = np.random.default_rng(0)
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32"]
TOL = {"float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10), "float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2),
       "int64": (0, 0), "int32": (0, 0)}


def to_np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().float().numpy() if x.dtype in (torch.bfloat16, torch.float16) else x.detach().numpy()
    return np.array(x.tolist(), dtype=np.float64).reshape(tuple(x.shape))


def check(k, t, dtype):
    rtol, atol = TOL[dtype]
    assert tuple(k.shape) == tuple(t.shape)
    assert str(k.dtype).removeprefix("kiln.") == str(t.dtype).removeprefix("torch.")
    np.testing.assert_allclose(to_np(k), to_np(t), rtol=rtol, atol=atol * max(1, np.abs(to_np(t)).max(initial=0)))


def kt(shape, dtype):
    t = torch.tensor(RNG.integers(-3, 4, size=shape) if "int" in dtype else RNG.standard_normal(shape)).to(
        getattr(torch, dtype))
    values = t.float().numpy() if dtype == "bfloat16" else t.numpy()
    return kiln.tensor(values, dtype=getattr(kiln, dtype)), t


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,k,n", [(3, 4, 5), (1, 7, 1), (16, 16, 16), (0, 3, 2), (2, 0, 3), (64, 33, 17)])
@pytest.mark.parametrize("layout", ["contiguous", "a_t", "b_t", "both_t"])
def test_mm(dtype, m, k, n, layout):
    ka, ta = kt((k, m) if layout in ("a_t", "both_t") else (m, k), dtype)
    kb, tb = kt((n, k) if layout in ("b_t", "both_t") else (k, n), dtype)
    if layout in ("a_t", "both_t"):
        ka, ta = ka.transpose(0, 1), ta.transpose(0, 1)
    if layout in ("b_t", "both_t"):
        kb, tb = kb.transpose(0, 1), tb.transpose(0, 1)
    check(kiln.mm(ka, kb), torch.mm(ta, tb), dtype)
    check(ka.matmul(kb), ta.matmul(tb), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_bmm_addmm_dot_mv_outer(dtype):
    (ka, ta), (kb, tb) = kt((4, 3, 5), dtype), kt((4, 5, 2), dtype)
    check(kiln.bmm(ka, kb), torch.bmm(ta, tb), dtype)
    (kc, tc), (kd, td), (ke, te) = kt((3, 2), dtype), kt((3, 5), dtype), kt((5, 2), dtype)
    check(kiln.addmm(kc, kd, ke, beta=2, alpha=3), torch.addmm(tc, td, te, beta=2, alpha=3), dtype)
    (kr, tr) = kt((2,), dtype)
    check(kiln.addmm(kr, kd, ke), torch.addmm(tr, td, te), dtype)
    (kv, tv), (kw, tw) = kt((5,), dtype), kt((5,), dtype)
    check(kiln.dot(kv, kw), torch.dot(tv, tw), dtype)
    check(kiln.mv(kd, kv), torch.mv(td, tv), dtype)
    check(kiln.outer(kv, kw), torch.outer(tv, tw), dtype)


@pytest.mark.parametrize("a,b", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
                                 ((5, 2, 3), (3,)), ((5, 2, 3), (5, 3, 4)), ((2, 5, 2, 3), (2, 5, 3, 1))])
def test_matmul_ranks(a, b):
    (ka, ta), (kb, tb) = kt(a, "float32"), kt(b, "float32")
    check(kiln.matmul(ka, kb), torch.matmul(ta, tb), "float32")


def test_linear_with_and_without_bias():
    (kx, tx), (kw, tw), (kb, tb) = kt((4, 3, 6), "float32"), kt((5, 6), "float32"), kt((5,), "float32")
    check(kiln.linear(kx, kw, kb), torch.nn.functional.linear(tx, tw, tb), "float32")
    check(kiln.linear(kx, kw), torch.nn.functional.linear(tx, tw), "float32")


@pytest.mark.parametrize("fn, args, message", [
    ("mm", ((300, 16), (8, 1)), "mat1 and mat2 shapes cannot be multiplied (300x16 and 8x1)"),
    ("mm", ((3,), (3, 2)), "self must be a matrix"),
    ("bmm", ((2, 3, 4), (3, 4, 5)), "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4]."),
    ("mv", ((2, 3), (4,)), "size mismatch, got input (2), mat (2x3), vec (4)"),
    ("dot", ((3,), (4,)), "inconsistent tensor size"),
])
def test_errors_match_torch(fn, args, message):
    for lib in (kiln, torch):
        tensors = [lib.ones(*s) for s in args]
        with pytest.raises(RuntimeError, match=re.escape(message)):
            getattr(lib, fn)(*tensors)


def test_dtype_mismatch_is_an_error():
    for lib in (kiln, torch):
        with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
            lib.mm(lib.ones(2, 2), lib.ones(2, 2, dtype=lib.float64))


def test_gradients_of_mm_bmm_addmm_linear_match_torch():
    data = {n: RNG.standard_normal(s).astype(np.float64) for n, s in
            {"a": (3, 4), "b": (4, 2), "c": (3, 2), "x": (2, 3, 4), "y": (2, 4, 5), "w": (2, 4), "bias": (2,)}.items()}
    k = {n: kiln.tensor(v, requires_grad=True) for n, v in data.items()}
    t = {n: torch.tensor(v, requires_grad=True) for n, v in data.items()}
    for lib, v in ((kiln, k), (torch, t)):
        outs = [lib.mm(v["a"], v["b"]), lib.bmm(v["x"], v["y"]), lib.addmm(v["c"], v["a"], v["b"], beta=0.5, alpha=2),
                (lib.linear if lib is kiln else torch.nn.functional.linear)(v["a"], v["w"], v["bias"])]
        for o in outs:
            o.backward(lib.ones(*o.shape, dtype=lib.float64))
    for n in data:
        np.testing.assert_allclose(k[n].grad.numpy(), t[n].grad.numpy(), rtol=1e-10, atol=1e-10)
    assert kiln.autograd.gradcheck(kiln.mm, (k["a"], k["b"]))


@pytest.mark.parametrize("a,b", [((2, 1, 3, 4), (3, 4, 5)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,)), ((5, 3, 4), (1, 4, 2)),
                                 ((2, 3, 4), (4, 5)), ((1, 2, 3), (2, 1, 3, 4)),
                                 # empty contractions and batches: the folded row count must not come from -1
                                 ((2, 3, 0), (0, 5)), ((2, 3, 0), (0,)), ((0, 3, 0), (0, 2)), ((0, 3, 4), (4,)),
                                 ((2, 0, 4), (4, 5)), ((2, 3, 0), (2, 0, 5))])
def test_matmul_broadcasts_batch_dimensions_as_torch(a, b):
    rng = np.random.default_rng(len(a) * 10 + len(b))
    x, y = rng.standard_normal(a).astype(np.float32), rng.standard_normal(b).astype(np.float32)
    got = kiln.matmul(kiln.tensor(x), kiln.tensor(y))
    want = torch.matmul(torch.tensor(x), torch.tensor(y))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a,b", [((2, 3, 4), (3, 5, 6)), ((2, 3, 4), (2, 5, 6)), ((3, 4), (5,)), ((4,), (2, 5, 6))])
def test_matmul_shape_errors_match_torch(a, b):
    from torch_compare import assert_same_error

    assert_same_error(lambda: kiln.matmul(kiln.ones(*a), kiln.ones(*b)), lambda: torch.matmul(torch.ones(*a), torch.ones(*b)))


@pytest.mark.parametrize("op", ["baddbmm", "addbmm"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2), (0, 1), (0, -1.5)])
def test_baddbmm_and_addbmm_match_torch(op, dtype, beta, alpha):
    rng = np.random.default_rng(3)
    self_shape = (4, 3, 5) if op == "baddbmm" else (3, 5)
    s = rng.standard_normal(self_shape).astype(dtype)
    if beta == 0:
        s[0] = np.nan  # beta == 0 ignores self, nan included
    b1, b2 = rng.standard_normal((4, 3, 2)).astype(dtype), rng.standard_normal((4, 2, 5)).astype(dtype)
    got = getattr(kiln, op)(kiln.tensor(s), kiln.tensor(b1), kiln.tensor(b2), beta=beta, alpha=alpha)
    want = getattr(torch, op)(torch.tensor(s), torch.tensor(b1), torch.tensor(b2), beta=beta, alpha=alpha)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    method = getattr(kiln.tensor(s), op)(kiln.tensor(b1), kiln.tensor(b2), beta=beta, alpha=alpha)
    np.testing.assert_allclose(method.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["baddbmm", "addbmm"])
@pytest.mark.parametrize("shapes", [((3, 5), (4, 3, 2), (5, 2, 5)), ((3, 5), (4, 3), (4, 2, 5)),
                                    ((3, 5), (4, 3, 2), (4, 3, 5))])
def test_baddbmm_and_addbmm_errors_match_torch(op, shapes):
    from torch_compare import assert_same_error

    assert_same_error(lambda: getattr(kiln, op)(*[kiln.ones(*s) for s in shapes]),
                      lambda: getattr(torch, op)(*[torch.ones(*s) for s in shapes]))


def test_bmm_of_small_products_is_split_by_batch_and_does_not_depend_on_the_thread_count():
    # Note [bmm splits small products by batch]: many small products run one per thread.
    rng = np.random.default_rng(5)
    a = rng.standard_normal((24, 256, 64)).astype(np.float32)
    b = rng.standard_normal((24, 64, 256)).astype(np.float32)
    before = kiln.get_num_threads()
    try:
        results = []
        for threads in (1, 2):
            kiln.set_num_threads(threads)
            results.append(kiln.bmm(kiln.tensor(a), kiln.tensor(b)).numpy())
            results.append(kiln.matmul(kiln.tensor(a).view(2, 12, 256, 64), kiln.tensor(b).view(2, 12, 64, 256))
                           .reshape(24, 256, 256).numpy())
    finally:
        kiln.set_num_threads(before)
    expected = torch.bmm(torch.tensor(a), torch.tensor(b)).numpy()
    for r in results:
        np.testing.assert_allclose(r, expected, rtol=1e-4, atol=1e-4)
    assert np.array_equal(results[0], results[2]) and np.array_equal(results[1], results[3])
