"""kiln.nn.SyncBatchNorm on 2 and 3 processes over loopback, each with its own share (of unequal size) of one
batch: outputs, input gradients, the sum of the ranks' weight and bias gradients and the running stats
equal those of one BatchNorm (kiln, and torch) over the whole batch; convert_sync_batchnorm on a small
CNN (against torch's converted module); eval mode; the errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import distributed_sync_batchnorm_workers as workers
import kiln
from distributed_ranks import run_ranks


def _cnn_initial() -> list:
    torch.manual_seed(0)
    return [p.detach().double().tolist() for p in workers.cnn(torch.nn).parameters()]


@pytest.fixture(scope="module")
def ranks():
    """One 2-rank job runs every 2-rank case (process start-up dominates these tests' time)."""
    return run_ranks(workers.sync_batchnorm_jobs, 2, _cnn_initial(), timeout=90)


@pytest.fixture(scope="module")
def three_ranks():
    """One 3-rank job runs the cases whose batch is split 3 ways."""
    return run_ranks(workers.sync_batchnorm_jobs, 3, _cnn_initial(), timeout=90)


def _ranks_of(request, case: str) -> list:
    return request.getfixturevalue("three_ranks" if len(workers.CASES[case]["split"]) == 3 else "ranks")


def _close(got, expected, dtype: str = "float64") -> None:
    tol = {"rtol": 1e-10, "atol": 1e-12} if dtype == "float64" else {"rtol": 1e-4, "atol": 1e-5}
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64), **tol)


def _joined(ranks, case: str, key) -> np.ndarray:
    """A per-sample result of both ranks, concatenated along the batch in rank order."""
    parts = [np.asarray(key(r[case]), dtype=np.float64) for r in ranks]
    return np.concatenate([p.reshape(-1, *p.shape[1:]) if p.size else p.reshape(0, *parts[0].shape[1:])
                           for p in parts])


def _reference(framework, case: str) -> dict:
    """One process, plain BatchNorm over the whole batch: what every rank together must give."""
    spec = workers.CASES[case]
    options = {k: v for k, v in spec["options"].items() if k not in ("group", "dtype")}
    dtype = getattr(framework, spec["options"].get("dtype", "float64"))
    layer = framework.nn.BatchNorm1d if len(spec["shape"]) <= 2 else (
        framework.nn.BatchNorm2d if len(spec["shape"]) == 3 else framework.nn.BatchNorm3d)
    bn = layer(workers.CHANNELS, **options).to(dtype)
    if bn.affine:
        with framework.no_grad():
            bn.weight.copy_(framework.tensor(workers.WEIGHT, dtype=dtype))
            bn.bias.copy_(framework.tensor(workers.BIAS, dtype=dtype))
    steps = []
    for step in range(workers.STEPS):
        x = framework.tensor(workers.full_input(case, step).tolist(), dtype=dtype).requires_grad_()
        out = bn(x)
        out.backward(framework.tensor(workers.full_grad_output(case, step).tolist(), dtype=dtype))
        steps.append({"out": out.detach().double().tolist(), "grad": x.grad.double().tolist()})
        param_grads = [p.grad.double().tolist() for p in bn.parameters()]
        bn.zero_grad()
    return {"steps": steps, "param_grads": param_grads,
            "buffers": {name: b.double().tolist() for name, b in bn.named_buffers()}}


CASES = list(workers.CASES)


@pytest.mark.parametrize("framework", ["kiln", "torch"])
@pytest.mark.parametrize("case", CASES)
def test_sync_batchnorm_equals_batchnorm_on_the_whole_batch(request, case, framework):
    ranks = _ranks_of(request, case)
    expected = _reference(kiln if framework == "kiln" else torch, case)
    dtype = workers.CASES[case]["options"].get("dtype", "float64")
    for step in range(workers.STEPS):
        _close(_joined(ranks, case, lambda r: r["steps"][step]["out"]), expected["steps"][step]["out"], dtype)
        _close(_joined(ranks, case, lambda r: r["steps"][step]["grad"]), expected["steps"][step]["grad"], dtype)
    # Weight and bias gradients stay per rank (as torch's); their sum is the whole batch's (DDP averages them).
    summed = [sum(np.asarray(r[case]["param_grads"][i]) for r in ranks)
              for i in range(len(ranks[0][case]["param_grads"]))]
    assert len(summed) == len(expected["param_grads"])
    for got, want in zip(summed, expected["param_grads"]):
        _close(got, want, dtype)
    for r in ranks:  # every rank keeps the same running stats: the whole batch's (unbiased variance)
        assert list(r[case]["buffers"]) == list(expected["buffers"])
        for name, want in expected["buffers"].items():
            _close(r[case]["buffers"][name], want, dtype)


@pytest.mark.parametrize("case", [c for c in CASES if c != "no-running-stats"])  # no running stats: batch stats
def test_sync_batchnorm_eval_uses_running_stats_without_syncing(request, case):
    """Eval mode is plain batch norm on the running stats: each rank's share normalised on its own."""
    ranks = _ranks_of(request, case)
    spec = workers.CASES[case]
    dtype = spec["options"].get("dtype", "float64")
    tdtype = getattr(torch, dtype)
    options = {k: v for k, v in spec["options"].items() if k not in ("group", "dtype")}
    bn = torch.nn.SyncBatchNorm(workers.CHANNELS, **options).to(tdtype)
    state = {name: torch.tensor(v, dtype=torch.float64) for name, v in ranks[0][case]["buffers"].items()}
    if bn.affine:
        state.update(weight=torch.tensor(workers.WEIGHT, dtype=tdtype), bias=torch.tensor(workers.BIAS, dtype=tdtype))
    bn.load_state_dict(state)
    bn.eval()
    expected = bn(torch.tensor(workers.full_input(case, 0), dtype=tdtype)).double()
    _close(_joined(ranks, case, lambda r: r["eval"]), expected.tolist(), dtype)


def test_converted_cnn_trains_as_one_process_on_the_whole_batch(ranks):
    torch_model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(workers.cnn(torch.nn).double())
    with torch.no_grad():
        for p, values in zip(torch_model.parameters(), _cnn_initial()):
            p.copy_(torch.tensor(values, dtype=torch.float64))
    assert ranks[0]["cnn"]["types"] == [type(m).__name__ for m in torch_model.modules()]
    assert list(ranks[0]["cnn"]["buffers"]) == [k for k, _ in torch_model.named_buffers()]
    # torch's SyncBatchNorm needs a GPU to sync; its BatchNorm over the whole batch is the reference.
    reference = workers.cnn(torch.nn).double()
    reference.load_state_dict(torch_model.state_dict())
    x = torch.tensor(workers.cnn_batch(), dtype=torch.float64).requires_grad_()
    out = reference(x)
    (out * out).sum().backward()
    _close(_joined(ranks, "cnn", lambda r: r["out"]), out.detach().tolist())
    _close(_joined(ranks, "cnn", lambda r: r["grad"]), x.grad.tolist())
    for a, b, p in zip(ranks[0]["cnn"]["param_grads"], ranks[1]["cnn"]["param_grads"], reference.parameters()):
        _close(np.asarray(a) + np.asarray(b), p.grad.tolist())
    for name, b in reference.named_buffers():
        for r in ranks:
            _close(r["cnn"]["buffers"][name], b.double().tolist())


def test_one_value_per_channel_over_the_group_is_an_error(ranks):
    assert ranks[0]["too_few_values"] == ranks[1]["too_few_values"]
    assert "Expected more than 1 value per channel when training" in ranks[0]["too_few_values"]


def test_convert_sync_batchnorm_structure_matches_torch():
    kmodel = workers.cnn(kiln.nn)
    kmodel[5].eval()
    tmodel = workers.cnn(torch.nn)
    tmodel[5].eval()
    kbn = kmodel[1]
    kout = kiln.nn.SyncBatchNorm.convert_sync_batchnorm(kmodel)
    tout = torch.nn.SyncBatchNorm.convert_sync_batchnorm(tmodel)
    assert [type(m).__name__ for m in kout.modules()] == [type(m).__name__ for m in tout.modules()]
    assert list(kout.state_dict()) == list(tout.state_dict())
    assert repr(kout) == repr(tout)
    assert kout[1].weight is kbn.weight and kout[1].running_var is kbn.running_var
    assert kout[1].training and not kout[5].training


def test_sync_batchnorm_without_process_group_is_batchnorm():
    """No initialized process group: training and eval are BatchNorm's, as torch's."""
    assert not kiln.distributed.is_initialized()
    km, tm = kiln.nn.SyncBatchNorm(3).double(), torch.nn.SyncBatchNorm(3).double()
    x = np.random.default_rng(0).standard_normal((4, 3, 2))
    for _ in range(2):
        _close(km(kiln.tensor(x.tolist(), dtype=kiln.float64)).tolist(), tm(torch.tensor(x)).tolist())
    km.eval()
    tm.eval()
    _close(km(kiln.tensor(x.tolist(), dtype=kiln.float64)).tolist(), tm(torch.tensor(x)).tolist())


def test_sync_batchnorm_errors():
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        kiln.nn.SyncBatchNorm(3)(kiln.zeros(3))
    with pytest.raises(ValueError, match="SyncBatchNorm number of input channels should be non-zero"):
        kiln.nn.SyncBatchNorm(0)(kiln.zeros(4, 0, 2))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        kiln.nn.SyncBatchNorm(3)(kiln.zeros(1, 3))
