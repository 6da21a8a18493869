"""kiln.utils.data against torch.utils.data: batching, collation of tensors,
numbers, numpy arrays, tuples, lists, dicts and namedtuples; shuffle
determinism under a generator; drop_last; samplers; random_split; Subset,
ConcatDataset, IterableDataset; lengths and errors."""

import collections
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import kiln
import kiln.utils.data as kdata
from torch_compare import assert_same_error


def tensors(n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64)
    return (kiln.from_numpy(x), kiln.from_numpy(y)), (torch.from_numpy(x), torch.from_numpy(y))


def as_numpy(batch):
    """A batch as nested lists/dicts of numpy arrays, comparable across libraries."""
    if isinstance(batch, (kiln.Tensor, torch.Tensor)):
        return ("tensor", str(batch.dtype).split(".")[-1], batch.numpy().tolist())
    if isinstance(batch, dict):
        return {k: as_numpy(v) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return (type(batch).__name__, [as_numpy(v) for v in batch])
    if isinstance(batch, (list, tuple)):
        return (type(batch).__name__, [as_numpy(v) for v in batch])
    return batch


@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (3, False), (3, True), (4, True), (10, False),
                                                  (11, False), (11, True)])
def test_tensor_dataset_batches(batch_size, drop_last):
    (kx, ky), (tx, ty) = tensors()
    kl = kdata.DataLoader(kdata.TensorDataset(kx, ky), batch_size=batch_size, drop_last=drop_last)
    tl = tdata.DataLoader(tdata.TensorDataset(tx, ty), batch_size=batch_size, drop_last=drop_last)
    assert len(kl) == len(tl)
    kb, tb = [as_numpy(b) for b in kl], [as_numpy(b) for b in tl]
    assert kb == tb


SAMPLES = {
    "floats": [1.5, 2.5, 3.0],
    "ints": [1, 2, 3],
    "bools": [True, False, True],
    "numpy": [np.arange(4, dtype=np.float32) + i for i in range(3)],
    "numpy_scalars": [np.float64(i) for i in range(3)],
    "tuples": [(np.float32(i), i) for i in range(3)],
    "lists": [[i, float(i)] for i in range(3)],
    "dicts": [{"a": i, "b": [float(i), 2.0 * i]} for i in range(3)],
    "strings": ["x", "y", "z"],
}


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_default_collate_matches_torch(kind):
    samples = SAMPLES[kind]
    assert as_numpy(kdata.default_collate(samples)) == as_numpy(tdata.default_collate(samples))


def test_collate_tensors_and_namedtuples():
    Point = collections.namedtuple("Point", ["x", "y"])
    k = kdata.default_collate([Point(kiln.ones(2) * i, i) for i in range(3)])
    t = tdata.default_collate([Point(torch.ones(2) * i, i) for i in range(3)])
    assert isinstance(k, Point) and as_numpy(k) == as_numpy(t)


def test_collate_errors():
    assert_same_error(lambda: kdata.default_collate([[1, 2], [3]]), lambda: tdata.default_collate([[1, 2], [3]]))
    k_err = pytest.raises(TypeError, kdata.default_collate, [object(), object()])
    t_err = pytest.raises(TypeError, tdata.default_collate, [object(), object()])
    assert str(k_err.value) == str(t_err.value)


def test_shuffle_is_deterministic_under_a_generator():
    (kx, ky), _ = tensors(20)
    orders = []
    for seed in (5, 5, 6):
        g = kiln.Generator()
        g.manual_seed(seed)
        loader = kdata.DataLoader(kdata.TensorDataset(kx, ky), batch_size=4, shuffle=True, generator=g)
        orders.append([b[1].tolist() for b in loader] + [b[1].tolist() for b in loader])  # two epochs
    assert orders[0] == orders[1]
    assert orders[0] != orders[2]
    first_epoch, second_epoch = sum(orders[0][:5], []), sum(orders[0][5:], [])
    assert sorted(first_epoch) == list(range(20)) and sorted(second_epoch) == list(range(20))
    assert first_epoch != second_epoch  # a fresh permutation each epoch


def test_shuffle_follows_manual_seed():
    (kx, ky), _ = tensors(20)
    runs = []
    for _ in range(2):
        kiln.manual_seed(1)
        runs.append([b[1].tolist() for b in kdata.DataLoader(kdata.TensorDataset(kx, ky), batch_size=5,
                                                             shuffle=True)])
    assert runs[0] == runs[1]


def test_samplers():
    data = list(range(10))
    assert list(kdata.SequentialSampler(data)) == list(range(10))
    assert list(kdata.BatchSampler(kdata.SequentialSampler(data), 4, False)) == \
        list(tdata.BatchSampler(tdata.SequentialSampler(data), 4, False))
    assert len(kdata.BatchSampler(range(10), 4, True)) == len(tdata.BatchSampler(range(10), 4, True)) == 2
    g = kiln.Generator()
    g.manual_seed(0)
    drawn = list(kdata.RandomSampler(data, replacement=True, num_samples=70, generator=g))
    assert len(drawn) == 70 and set(drawn) <= set(data)
    g.manual_seed(0)
    assert sorted(kdata.RandomSampler(data, generator=g)) == data
    assert sorted(kdata.SubsetRandomSampler([3, 5, 7])) == [3, 5, 7]
    weighted = list(kdata.WeightedRandomSampler([0.0, 1.0, 0.0, 1.0], 20))
    assert set(weighted) <= {1, 3}


def test_sampler_errors():
    assert_same_error(lambda: kdata.BatchSampler(range(3), 0, False), lambda: tdata.BatchSampler(range(3), 0, False))
    assert_same_error(lambda: kdata.BatchSampler(range(3), 2, 1), lambda: tdata.BatchSampler(range(3), 2, 1))
    assert_same_error(lambda: kdata.RandomSampler([], num_samples=0), lambda: tdata.RandomSampler([], num_samples=0))


def test_custom_sampler_batch_sampler_and_collate_fn():
    (kx, ky), (tx, ty) = tensors()
    kds, tds = kdata.TensorDataset(kx, ky), tdata.TensorDataset(tx, ty)
    order = [9, 0, 8, 1, 7]
    kb = [as_numpy(b) for b in kdata.DataLoader(kds, batch_size=2, sampler=order)]
    tb = [as_numpy(b) for b in tdata.DataLoader(tds, batch_size=2, sampler=order)]
    assert kb == tb
    batches = [[0, 1, 2], [5], [9, 3]]
    kb = [as_numpy(b) for b in kdata.DataLoader(kds, batch_sampler=batches)]
    tb = [as_numpy(b) for b in tdata.DataLoader(tds, batch_sampler=batches)]
    assert kb == tb
    assert [len(b) for b in kdata.DataLoader(kds, batch_size=4, collate_fn=lambda s: s)] == [4, 4, 2]


def test_batch_size_none_disables_batching():
    data = [np.float32(1.0), np.arange(3)]
    k = [as_numpy(b) for b in kdata.DataLoader(data, batch_size=None)]
    t = [as_numpy(b) for b in tdata.DataLoader(data, batch_size=None)]
    assert k == t


def test_dataloader_errors():
    (kx, ky), (tx, ty) = tensors()
    kds, tds = kdata.TensorDataset(kx, ky), tdata.TensorDataset(tx, ty)
    assert_same_error(lambda: kdata.DataLoader(kds, sampler=[0, 1], shuffle=True),
                      lambda: tdata.DataLoader(tds, sampler=[0, 1], shuffle=True))
    assert_same_error(lambda: kdata.DataLoader(kds, batch_sampler=[[0]], batch_size=2),
                      lambda: tdata.DataLoader(tds, batch_sampler=[[0]], batch_size=2))
    assert_same_error(lambda: kdata.DataLoader(kds, batch_size=None, drop_last=True),
                      lambda: tdata.DataLoader(tds, batch_size=None, drop_last=True))
    assert_same_error(lambda: kdata.DataLoader(kds, num_workers=-1), lambda: tdata.DataLoader(tds, num_workers=-1))
    assert_same_error(lambda: kdata.TensorDataset(kiln.ones(3), kiln.ones(4)),
                      lambda: tdata.TensorDataset(torch.ones(3), torch.ones(4)))


class KCount(kdata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


class TCount(tdata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_dataset(drop_last):
    k = kdata.DataLoader(KCount(10), batch_size=4, drop_last=drop_last)
    t = tdata.DataLoader(TCount(10), batch_size=4, drop_last=drop_last)
    assert [as_numpy(b) for b in k] == [as_numpy(b) for b in t]
    assert len(k) == len(t)
    assert_same_error(lambda: kdata.DataLoader(KCount(3), shuffle=True), lambda: tdata.DataLoader(TCount(3),
                                                                                                  shuffle=True))
    assert list(KCount(2) + KCount(3)) == [0, 1, 0, 1, 2]


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.5, 0.25, 0.25], [0.33, 0.33, 0.34], [10]])
def test_random_split(lengths):
    ds = list(range(10))
    g = kiln.Generator()
    g.manual_seed(0)
    parts = kdata.random_split(ds, lengths, generator=g)
    tparts = tdata.random_split(ds, lengths, generator=torch.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [len(p) for p in tparts]
    seen = sorted(x for p in parts for x in p)
    assert seen == ds
    g.manual_seed(0)
    again = kdata.random_split(ds, lengths, generator=g)
    assert [list(p) for p in parts] == [list(p) for p in again]


def test_random_split_errors_and_warnings():
    assert_same_error(lambda: kdata.random_split(list(range(10)), [3, 3]),
                      lambda: tdata.random_split(list(range(10)), [3, 3]))
    with warnings.catch_warnings(record=True) as kw:
        warnings.simplefilter("always")
        kdata.random_split(list(range(2)), [0.9, 0.1])
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        tdata.random_split(list(range(2)), [0.9, 0.1])
    assert [str(w.message) for w in kw] == [str(w.message) for w in tw]


def test_subset_and_concat():
    a, b = list(range(5)), list(range(10, 13))
    kc, tc = kdata.ConcatDataset([a, b]), tdata.ConcatDataset([a, b])
    assert len(kc) == len(tc) == 8
    assert [kc[i] for i in range(-8, 8)] == [tc[i] for i in range(-8, 8)]
    assert_same_error(lambda: kc[-9], lambda: tc[-9])
    assert_same_error(lambda: kdata.ConcatDataset([]), lambda: tdata.ConcatDataset([]))
    s = kdata.Subset(a, [4, 0, 2])
    assert len(s) == 3 and [s[i] for i in range(3)] == [4, 0, 2]
    (kx, ky), _ = tensors()
    ds = kdata.TensorDataset(kx, ky)
    joined = ds + ds
    assert isinstance(joined, kdata.ConcatDataset) and len(joined) == 20
    batches = list(kdata.DataLoader(kdata.Subset(ds, [1, 3, 5]), batch_size=2))
    assert batches[0][1].tolist() == [1, 3] and batches[1][1].tolist() == [5]


def test_dataset_base_raises():
    with pytest.raises(NotImplementedError):
        kdata.Dataset()[0]
