"""sort, argsort, msort and topk against torch: dims, descending/largest, stable
ties, NaN ordering, integer and floating dtypes, non-contiguous, 0-size and
0-dim inputs, gradients, gradcheck, errors."""

import numpy as np
import pytest
import torch

import kiln
from nn_compare import close, exact, grad_pair
from torch_compare import assert_same_error, kiln_dtype, torch_dtype

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int8", "int16", "int32", "int64", "uint8"]


def make(shape, dtype, *, seed=0, ties=False, nan=False, noncontiguous=False):
    """The same values as a kiln and a torch tensor; ties draws from few values."""
    rng = np.random.default_rng(seed)
    if noncontiguous:
        shape = tuple(reversed(shape))
    if ties or dtype in INTS or dtype == "bool":
        values = rng.integers(0, 4 if ties else 100, size=shape).astype(np.float64)
    else:
        values = rng.standard_normal(shape)
    if nan:
        values[rng.random(shape) < 0.2] = np.nan
    t = torch.tensor(values, dtype=torch.float64).to(torch_dtype(dtype))
    k = kiln.tensor(values, dtype=kiln_dtype(dtype))
    if noncontiguous:
        t, k = t.permute(*reversed(range(t.dim()))), k.permute(*reversed(range(k.dim())))
    return k, t


SHAPES_DIMS = [((7,), 0), ((4, 9), 1), ((4, 9), 0), ((3, 5, 6), -1), ((3, 5, 6), 1), ((2, 1, 40), 2)]


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("shape,dim", SHAPES_DIMS)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable_matches_torch_exactly(dtype, shape, dim, descending):
    k, t = make(shape, dtype, ties=True)
    kv, ki = kiln.sort(k, dim=dim, descending=descending, stable=True)
    tv, ti = torch.sort(t, dim=dim, descending=descending, stable=True)
    exact(kv, tv)
    exact(ki, ti)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_nan_is_largest(dtype, descending):
    k, t = make((5, 30), dtype, nan=True)
    kv, ki = k.sort(dim=1, descending=descending, stable=True)
    tv, ti = t.sort(dim=1, descending=descending, stable=True)
    exact(kv, tv)
    exact(ki, ti)


def test_sort_unstable_values_and_gathered_indices():
    # Without stable=True ties may come in any order: values match, indices point at them.
    k, t = make((6, 50), "float32", ties=True)
    kv, ki = kiln.sort(k, -1)
    tv, _ = torch.sort(t, -1)
    exact(kv, tv)
    exact(k.gather(-1, ki), tv)


def test_sort_return_type_and_bool():
    k, t = make((10,), "bool")
    r = kiln.sort(k)
    assert type(r).__name__ == "sort" and type(r).__module__ == "kiln.return_types"
    exact(r.values, torch.sort(t, stable=True).values)
    exact(r.indices, torch.sort(t, stable=True).indices)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_sort_noncontiguous(dtype):
    k, t = make((5, 7, 3), dtype, noncontiguous=True, seed=3)
    for dim in range(3):
        kv, ki = k.sort(dim=dim, stable=True)
        tv, ti = t.sort(dim=dim, stable=True)
        exact(kv, tv)
        exact(ki, ti)


def test_sort_zero_size_and_zero_dim():
    for shape in [(0,), (3, 0), (0, 4)]:
        k, t = make(shape, "float32")
        for dim in range(len(shape)):
            kv, ki = kiln.sort(k, dim)
            tv, ti = torch.sort(t, dim)
            exact(kv, tv)
            exact(ki, ti)
    k, t = kiln.tensor(2.5), torch.tensor(2.5)
    kv, ki = kiln.sort(k)
    tv, ti = torch.sort(t)
    exact(kv, tv)
    exact(ki, ti)


@pytest.mark.parametrize("descending", [False, True])
def test_argsort_and_msort(descending):
    k, t = make((4, 12), "float64", ties=True, seed=5)
    exact(kiln.argsort(k, dim=1, descending=descending, stable=True),
          torch.argsort(t, dim=1, descending=descending, stable=True))
    exact(k.argsort(dim=0, descending=descending, stable=True), t.argsort(dim=0, descending=descending, stable=True))
    exact(kiln.msort(k), torch.msort(t))
    k, t = make((4, 12), "float64", seed=6)  # distinct values: the default argsort agrees too
    exact(kiln.argsort(k, descending=descending), torch.argsort(t, descending=descending))


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("shape,dim,k", [((20,), 0, 3), ((20,), 0, 20), ((5, 300), 1, 4), ((5, 300), 1, 200),
                                         ((6, 4), 0, 0), ((3, 4, 5), 1, 2)])
def test_topk_matches_torch(dtype, largest, shape, dim, k):
    # Distinct values (a permutation), so the selected indices are unique as well.
    rng = np.random.default_rng(1)
    n = int(np.prod(shape))
    values = rng.permutation(n).reshape(shape).astype(np.float64)
    if dtype in ("int8", "uint8"):
        values = np.mod(values, 100)  # ties: the indices are checked through gather
    t = torch.tensor(values).to(torch_dtype(dtype))
    kt = kiln.tensor(values, dtype=kiln_dtype(dtype))
    r = kiln.topk(kt, k, dim, largest)
    tv, ti = torch.topk(t, k, dim, largest)
    assert type(r).__name__ == "topk"
    exact(r.values, tv)
    if len(torch.unique(t)) == n:  # no ties after rounding to dtype
        exact(r.indices, ti)
    else:
        exact(kt.gather(dim, r.indices), tv)


def test_topk_nan_unsorted_noncontiguous_zero_dim():
    k, t = make((4, 30), "float32", nan=True, seed=2)
    for largest in (True, False):
        kv, ki = k.topk(5, largest=largest)
        tv, _ = t.topk(5, largest=largest)
        exact(kv, tv)
        exact(k.gather(1, ki), tv)
    k, t = make((6, 40), "float64", noncontiguous=True)
    kv, ki = k.topk(3, dim=0, sorted=False)
    tv, ti = t.topk(3, dim=0, sorted=False)
    exact(kv.sort(0).values, tv.sort(0).values)
    exact(kiln.tensor(2.0).topk(1).values, torch.tensor(2.0).topk(1).values)
    exact(kiln.tensor(2.0).topk(0).indices, torch.tensor(2.0).topk(0).indices)


@pytest.mark.parametrize("op", ["sort", "topk"])
def test_gradients(op):
    k, t = make((4, 9), "float32", seed=7)
    k.requires_grad_(True)
    t.requires_grad_(True)
    if op == "sort":
        ko, to = k.sort(1, descending=True).values, t.sort(1, descending=True).values
    else:
        ko, to = k.topk(3, dim=0).values, t.topk(3, dim=0).values
    grad_pair(ko, to)
    close(k.grad, t.grad)
    assert ko.grad_fn.name() == to.grad_fn.name()


def test_gradcheck():
    k, _ = make((3, 6), "float64", seed=8)
    k.requires_grad_(True)
    assert kiln.autograd.gradcheck(lambda x: x.sort(1).values, (k,))
    assert kiln.autograd.gradcheck(lambda x: x.sort(0, descending=True).values, (k,))
    assert kiln.autograd.gradcheck(lambda x: x.topk(2, 1).values, (k,))
    assert kiln.autograd.gradcheck(lambda x: x.topk(2, 0, largest=False).values, (k,))
    assert kiln.autograd.gradcheck(lambda x: kiln.msort(x), (k,))


def test_errors():
    k, t = make((3, 4), "float32")
    assert_same_error(lambda: k.sort(2), lambda: t.sort(2))
    assert_same_error(lambda: k.topk(1, 3), lambda: t.topk(1, 3))
    assert_same_error(lambda: kiln.tensor(1.0).sort(1), lambda: torch.tensor(1.0).sort(1))
    for bad in (5, -1):
        e = assert_same_error(lambda: k.topk(bad), lambda: t.topk(bad), message=False)
        assert "selected index k out of range" in str(e)
    kb, tb = make((4,), "bool")
    assert_same_error(lambda: kb.topk(1), lambda: tb.topk(1))
    # stable= selects the overload whose dim is keyword-only, as in torch
    assert_same_error(lambda: k.sort(1, True, stable=True), lambda: t.sort(1, True, stable=True), message=False)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 5, 20, 600])
def test_topk_equals_stable_sort_prefix(largest, k):
    # Both the heap path (small k) and the selection path (large k): ties and NaN included,
    # topk's k elements are the stable sort's first k, indices too.
    kt, t = make((3, 1000), "float32", ties=True, seed=4)
    kt = kiln.where(kiln.tensor(np.random.default_rng(5).random((3, 1000)) < 0.01), float("nan"), kt)
    t = torch.from_numpy(kt.numpy().copy())
    r = kt.topk(k, 1, largest)
    sv, si = kt.sort(dim=1, descending=largest, stable=True)
    exact(r.values, torch.from_numpy(sv.numpy()[:, :k].copy()))
    exact(r.indices, torch.from_numpy(si.numpy()[:, :k].copy()))
    exact(r.values, t.topk(k, 1, largest).values)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_fewer_than_the_nans(dtype, largest):
    # k below the NaN count of a row (the selection path): largest takes NaNs only, in index order.
    k, t = make((3, 50), dtype, nan=True, seed=11)
    kv, ki = k.topk(4, 1, largest)
    sv, si = k.sort(dim=1, descending=largest, stable=True)
    exact(kv, torch.from_numpy(np.array(sv.float().tolist())[:, :4]).to(t.dtype))
    exact(ki, torch.from_numpy(si.numpy()[:, :4].copy()))
    exact(kv, t.topk(4, 1, largest).values)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_heap_path_with_leading_nans_and_ties(largest):
    # Small k on long rows takes the heap path, which skips blocks that cannot beat the
    # heap's top; rows start with NaNs (a NaN top for a smallest-k), and ties cross blocks.
    rng = np.random.default_rng(12)
    values = rng.integers(0, 50, size=(4, 3000)).astype(np.float32)
    values[:, :7] = np.nan
    values[1, 1500:1600] = np.nan
    values[2] = 3.0  # all ties
    k, t = kiln.tensor(values), torch.tensor(values)
    for kk in (1, 5, 40):
        r, e = k.topk(kk, 1, largest), t.topk(kk, 1, largest)
        exact(r.values, e.values)
        sv, si = k.sort(dim=1, descending=largest, stable=True)
        exact(r.indices, torch.from_numpy(si.numpy()[:, :kk].copy()))


def test_topk_of_a_zero_dim_tensor_writes_both_outputs_for_k_0():
    """topk(0) of a 0-dim tensor returns that element and index 0, as torch does; kiln's
    kernel wrote nothing for k = 0 and returned uninitialised memory (found by running
    this file under scripts/sanitize.sh preload, where ASan fills fresh memory with 0xbe)."""
    for _ in range(3):
        junk = [kiln.full((64,), -7.0, dtype=kiln.float64) for _ in range(8)]
        del junk  # the outputs below reuse these cached blocks, still holding -7.0
        values, indices = kiln.tensor(2.0).topk(0)
        assert (values.item(), indices.item()) == (2.0, 0)
