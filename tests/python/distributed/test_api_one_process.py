"""kiln.distributed in this process alone (a group of one, no other processes): the
API's surface, init_process_group's rendezvous errors, argument errors of the
collectives, the stores, and DistributedSampler's partitions."""

from __future__ import annotations

import inspect
from datetime import timedelta

import pytest
import torch

import kiln
import kiln.distributed as dist
from distributed_ranks import free_port
from kiln.utils.data import DistributedSampler

SHORT = timedelta(seconds=10)


@pytest.fixture
def one_process_group():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1,
                            timeout=SHORT)
    yield
    dist.destroy_process_group()


def test_the_api_has_torchs_names_and_signatures():
    for name in ["init_process_group", "new_group", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
                 "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "send", "recv", "isend", "irecv",
                 "barrier", "broadcast_object_list", "all_gather_object", "reduce", "destroy_process_group",
                 "all_to_all", "all_to_all_single"]:
        kiln_params = list(inspect.signature(getattr(dist, name)).parameters)
        torch_params = list(inspect.signature(getattr(torch.distributed, name)).parameters)
        assert kiln_params[:len(torch_params)] == torch_params[:len(kiln_params)], name
    assert dist.is_available() and not dist.is_initialized()
    assert [op for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX") if hasattr(dist.ReduceOp, op)] == [
        "SUM", "AVG", "PRODUCT", "MIN", "MAX"]
    from kiln.distributed import destroy_process_group, init_process_group  # noqa: F401  (a training script's import)


def test_one_process_group(one_process_group):
    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
    assert dist.get_backend() == "gloo" and dist.group.WORLD is not None
    t = kiln.arange(6.0).reshape(2, 3).t()
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert t.tolist() == kiln.arange(6.0).reshape(2, 3).t().tolist()
    work = dist.broadcast(t, src=0, async_op=True)
    assert work.wait() and work.is_completed()
    out = [None]
    dist.all_gather_object(out, {"a": 1})
    assert out == [{"a": 1}]


def test_process_group_errors(one_process_group):
    with pytest.raises(ValueError, match="trying to initialize the default process group twice"):
        dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="op must be a kiln.distributed.ReduceOp"):
        dist.all_reduce(kiln.ones(2), op="sum")
    with pytest.raises(ValueError, match="ReduceOp.AVG needs a floating-point or complex tensor, got int64"):
        dist.all_reduce(kiln.ones(2, dtype=kiln.int64), op=dist.ReduceOp.AVG)
    with pytest.raises(ValueError, match="ReduceOp.MAX is not supported for complex tensors"):
        dist.all_reduce(kiln.ones(2, dtype=kiln.complex64), op=dist.ReduceOp.MAX)
    with pytest.raises(ValueError, match=r"tensor_list must hold world_size \(1\) tensors, got 2"):
        dist.all_gather([kiln.ones(2), kiln.ones(2)], kiln.ones(2))
    with pytest.raises(ValueError, match="must have the shape and dtype of the input"):
        dist.all_gather([kiln.ones(3)], kiln.ones(2))
    with pytest.raises(ValueError, match="output tensor size must be equal to world_size"):
        dist.all_gather_into_tensor(kiln.ones(3), kiln.ones(2))
    with pytest.raises(ValueError, match="src rank 3 is not part of the group"):
        dist.broadcast(kiln.ones(2), src=3)
    with pytest.raises(ValueError, match="a rank cannot send to itself"):
        dist.send(kiln.ones(2), dst=0)
    with pytest.raises(TypeError, match="tensor must be a kiln.Tensor, got list"):
        dist.all_reduce([1.0, 2.0])
    with pytest.raises(ValueError, match=r"new_group: rank 4 is out of range for world_size 1"):
        dist.new_group([0, 4])
    with pytest.raises(ValueError, match=r"number of output splits \(2\) not equal to group size \(1\)"):
        dist.all_to_all_single(kiln.ones(3), kiln.ones(3), [1, 2], [3])
    with pytest.raises(ValueError, match=r"input split sizes \[2\] don't match total dim 0 size \(3\)"):
        dist.all_to_all_single(kiln.ones(3), kiln.ones(3), [3], [2])
    with pytest.raises(ValueError, match="must have at least one dimension"):
        dist.all_to_all_single(kiln.ones(()), kiln.ones(()))


def test_init_errors(monkeypatch):
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(kiln.ones(1))
    monkeypatch.setenv("KILN_NCCL_LIBRARY", "/nowhere/libnccl.so.2")  # the same answer where NCCL is installed
    with pytest.raises(RuntimeError, match="Distributed package doesn't have NCCL built in"):
        dist.init_process_group("nccl")
    with pytest.raises(RuntimeError, match="Distributed package doesn't have MPI built in"):
        dist.init_process_group("mpi")
    with pytest.raises(ValueError, match="Invalid backend: 'carrier-pigeon'"):
        dist.init_process_group("carrier-pigeon")
    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="environment variable RANK expected, but not set"):
        dist.init_process_group("gloo")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    with pytest.raises(ValueError, match="environment variable MASTER_ADDR expected, but not set"):
        dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="No rendezvous handler for udp://"):
        dist.init_process_group("gloo", init_method="udp://x:1")
    with pytest.raises(ValueError, match="Cannot specify both init_method and store"):
        dist.init_process_group("gloo", init_method="env://", store=object(), rank=0, world_size=1)
    with pytest.raises(ValueError, match="rank 2 is out of range for world_size 2"):
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:1", rank=2, world_size=2)
    assert not dist.is_initialized()


def test_a_rank_whose_peers_never_come_fails_within_the_timeout():
    with pytest.raises(RuntimeError, match=r"timed out after 0:00:00.300000 waiting for 2 processes to connect"):
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=2,
                                timeout=timedelta(milliseconds=300))
    assert not dist.is_initialized()


def test_stores(tmp_path):
    store = dist.TCPStore("127.0.0.1", 0, 1, True, timeout=SHORT)
    client = dist.TCPStore("127.0.0.1", store.port, timeout=SHORT)
    store.set("key", "value")
    assert client.get("key") == b"value"
    assert client.add("n", 5) == 5 and store.add("n", -2) == 3
    assert client.compare_set("key", "value", "new") == b"new"
    assert store.check(["key", "n"]) and not store.check(["absent"])
    with pytest.raises(RuntimeError, match="timed out after 50 ms waiting for keys 'absent'"):
        client.wait(["absent"], timedelta(milliseconds=50))
    assert store.delete_key("key") and not store.check(["key"])
    prefixed = dist.PrefixStore("job", client)
    prefixed.set("a", b"1")
    assert store.get("job/a") == b"1"
    path = tmp_path / "rendezvous"
    first, second = dist.FileStore(str(path)), dist.FileStore(str(path))
    first.set("k", b"v")
    assert second.get("k") == b"v" and second.add("count", 2) == 2 and first.num_keys() == 2
    del first, second
    assert not path.exists()  # the last store to close removes the file


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("length", [10, 12, 2])
def test_distributed_sampler_partitions(length, shuffle, drop_last):
    samplers = [DistributedSampler(range(length), num_replicas=3, rank=r, shuffle=shuffle, seed=5,
                                   drop_last=drop_last) for r in range(3)]
    oracle = [torch.utils.data.DistributedSampler(range(length), num_replicas=3, rank=r, shuffle=shuffle, seed=5,
                                                  drop_last=drop_last) for r in range(3)]
    parts = [list(s) for s in samplers]
    assert [len(p) for p in parts] == [len(s) for s in samplers] == [len(o) for o in oracle]
    covered = sorted(i for p in parts for i in p)
    if drop_last:
        assert len(set(covered)) == len(covered) and len(covered) == 3 * (length // 3)
    else:
        assert set(covered) == set(range(length))
    if not shuffle:
        assert parts == [list(o) for o in oracle]
    else:
        for s in samplers:
            s.set_epoch(1)
        reshuffled = [i for s in samplers for i in s]
        assert len(reshuffled) == len(covered) and (drop_last or set(reshuffled) == set(range(length)))
        assert parts == [list(s) for s in (DistributedSampler(range(length), 3, r, True, 5, drop_last)
                                           for r in range(3))]


def test_distributed_sampler_errors():
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(4), num_replicas=3, rank=3)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(4))
