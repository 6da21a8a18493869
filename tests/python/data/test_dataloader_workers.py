"""DataLoader with worker processes (num_workers > 0): batches equal to
num_workers=0's and in order, IterableDataset sharding with get_worker_info,
worker errors with their traceback, timeouts, dead workers, persistent workers,
and no process or shared-memory segment left behind."""

import os
import signal
import threading
import time

import pytest
import torch.utils.data as tdata

import kiln
from kiln.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info


class Squares(Dataset):
    def __init__(self, n=23, delay=0.0):
        self.n, self.delay = n, delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay:
            time.sleep(self.delay)
        return {"x": kiln.full((2,), float(i * i)), "half": kiln.ones(1, dtype=kiln.bfloat16) * i, "i": i}


class Sharded(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


class TorchSharded(tdata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = tdata.get_worker_info()
        return iter(range(info.id, self.n, info.num_workers))


class FailsAt(Dataset):
    def __init__(self, bad):
        self.bad = bad

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"sample {i} is broken")
        return i


class DiesAt(FailsAt):
    def __getitem__(self, i):
        if i == self.bad:
            os._exit(3)
        return i


def shm_segments():
    return {name for name in os.listdir("/dev/shm") if name.startswith("kiln_")}


def batches_as_lists(loader):
    return [{k: (v.float().tolist() if isinstance(v, kiln.Tensor) else v) for k, v in b.items()} for b in loader]


def test_workers_give_the_batches_of_the_main_process_in_order():
    before = shm_segments()
    dataset = Squares()
    expected = batches_as_lists(DataLoader(dataset, batch_size=4))
    for workers, prefetch in ((1, None), (3, 1), (2, 4)):
        loader = DataLoader(dataset, batch_size=4, num_workers=workers, prefetch_factor=prefetch)
        assert batches_as_lists(loader) == expected
    assert shm_segments() == before


def test_iterable_dataset_sharding_and_worker_info():
    assert get_worker_info() is None
    loader = DataLoader(Sharded(10), batch_size=3, num_workers=2)
    assert [b.tolist() for b in loader] == [[0, 2, 4], [1, 3, 5], [6, 8], [7, 9]]
    torch_loader = tdata.DataLoader(TorchSharded(10), batch_size=3, num_workers=2)
    assert [b.tolist() for b in torch_loader] == [[0, 2, 4], [1, 3, 5], [6, 8], [7, 9]]
    assert [int(b) for b in DataLoader(Sharded(5), batch_size=None, num_workers=2)] == [0, 1, 2, 3, 4]


def test_worker_init_fn_and_seeds():
    def init(worker_id):
        info = get_worker_info()
        assert info.id == worker_id and info.num_workers == 2 and type(info.dataset).__name__ == "Seeds"

    class Seeds(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return get_worker_info().seed

    seeds = [int(s) for s in DataLoader(Seeds(), batch_size=None, num_workers=2, worker_init_fn=init)]
    assert seeds[0] + 1 == seeds[1] and seeds[0] == seeds[2]  # base seed + worker id, round-robin


def test_a_worker_error_is_reraised_with_the_worker_traceback():
    loader = DataLoader(FailsAt(5), batch_size=2, num_workers=2)
    iterator = iter(loader)
    assert next(iterator).tolist() == [0, 1] and next(iterator).tolist() == [2, 3]
    with pytest.raises(ValueError, match=r"(?s)Caught ValueError in DataLoader worker process 0.*sample 5 is broken"):
        next(iterator)
    assert not any(w.is_alive() for w in iterator._workers)


def test_timeout_and_a_dead_worker_are_errors_and_leave_no_process():
    iterator = iter(DataLoader(Squares(4, delay=1.0), batch_size=2, num_workers=1, timeout=0.2))
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.2 seconds"):
        next(iterator)
    assert not any(w.is_alive() for w in iterator._workers)
    iterator = iter(DataLoader(DiesAt(1), batch_size=2, num_workers=1))
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        next(iterator)
    assert not any(w.is_alive() for w in iterator._workers)


def test_keyboard_interrupt_and_a_dropped_iterator_stop_the_workers():
    iterator = iter(DataLoader(Squares(8, delay=0.5), batch_size=1, num_workers=2))
    timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        for _ in iterator:
            pass
    timer.join()
    assert not any(w.is_alive() for w in iterator._workers)
    iterator = iter(DataLoader(Squares(), batch_size=2, num_workers=2))
    next(iterator)
    workers = list(iterator._workers)
    del iterator
    assert not any(w.is_alive() for w in workers)


def test_persistent_workers_serve_every_epoch():
    loader = DataLoader(Sharded(6), batch_size=2, num_workers=2, persistent_workers=True)
    first = [b.tolist() for b in loader]
    workers = list(loader._iterator._workers)
    second = [b.tolist() for b in loader]
    assert first == second == [[0, 2], [1, 3], [4], [5]]
    assert loader._iterator._workers == workers and all(w.is_alive() for w in workers)
    for _ in loader:
        break  # an epoch left early: its batches still in flight must not leak into the next one
    assert [b.tolist() for b in loader] == first
    loader._iterator.shutdown()
    assert not any(w.is_alive() for w in workers)


def test_worker_options_are_checked_as_torch_does():
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        DataLoader(Squares(), prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(Squares(), persistent_workers=True)
    assert DataLoader(Squares(), num_workers=2).prefetch_factor == 2
    assert len(DataLoader(Squares(), batch_size=4, num_workers=2, pin_memory=True)) == 6
