"""What the ranks of tests/python/distributed/test_sync_batchnorm.py run (helpers/distributed_ranks.py
starts them): SyncBatchNorm layers and a converted CNN trained on each rank's share of one seeded
batch, the shares of unequal sizes. kiln and numpy only (no torch); the test compares the results
with one process (kiln and torch) on the whole batch.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np

import kiln
import kiln.distributed as dist

TIMEOUT = timedelta(seconds=20)
CHANNELS = 3
WEIGHT = [1.5, 0.5, -2.0]
BIAS = [0.1, -0.2, 0.3]
STEPS = 2  # two training steps: running stats and num_batches_tracked move twice

# Each case: the input shape after the batch dim, each rank's share of the batch, and the layer's options.
CASES = {
    "2d-unequal": {"shape": (CHANNELS, 4, 4), "split": (3, 5), "options": {}},
    "1d-momentum-none": {"shape": (CHANNELS,), "split": (2, 6), "options": {"momentum": None}},
    "3d-no-affine": {"shape": (CHANNELS, 2, 3), "split": (5, 3), "options": {"affine": False}},
    "no-running-stats": {"shape": (CHANNELS, 3), "split": (6, 3), "options": {"track_running_stats": False}},
    "empty-rank": {"shape": (CHANNELS, 5), "split": (8, 0), "options": {}},
    "group": {"shape": (CHANNELS, 4), "split": (4, 4), "options": {"group": True}},
    "float32": {"shape": (CHANNELS, 4, 4), "split": (3, 5), "options": {"dtype": "float32"}},
    # On 3 ranks (a job of its own): the split's length is the world size.
    "3-ranks-2d": {"shape": (CHANNELS, 4, 4), "split": (3, 5, 2), "options": {}},
    "3-ranks-empty-middle": {"shape": (CHANNELS, 5), "split": (4, 0, 3), "options": {"momentum": None}},
    "3-ranks-1d-float32": {"shape": (CHANNELS,), "split": (2, 3, 6), "options": {"dtype": "float32"}},
}


def cases_of(world: int) -> list:
    """The cases a job of ``world`` ranks runs."""
    return [case for case, spec in CASES.items() if len(spec["split"]) == world]


def full_input(case: str, step: int) -> np.ndarray:
    spec = CASES[case]
    rng = np.random.default_rng(100 * step + len(case))
    return rng.standard_normal((sum(spec["split"]), *spec["shape"])) * 2.0 + 0.5


def full_grad_output(case: str, step: int) -> np.ndarray:
    spec = CASES[case]
    rng = np.random.default_rng(7 + 100 * step + len(case))
    return rng.standard_normal((sum(spec["split"]), *spec["shape"]))


def _share(full: np.ndarray, split: tuple, rank: int) -> np.ndarray:
    start = sum(split[:rank])
    return full[start:start + split[rank]]


def _tensor(values: np.ndarray, dtype) -> kiln.Tensor:
    return kiln.tensor(values.tolist(), dtype=kiln.float64).reshape(values.shape).to(dtype)


def _lists(t) -> list:
    return None if t is None else t.detach().to(kiln.float64).tolist()


def _run_case(rank: int, case: str) -> dict:
    spec = CASES[case]
    options = dict(spec["options"])
    dtype = getattr(kiln, options.pop("dtype", "float64"))
    group = dist.new_group(ranks=[0, 1]) if options.pop("group", False) else None
    layer = kiln.nn.SyncBatchNorm(CHANNELS, process_group=group, **options).to(dtype)
    if layer.affine:
        with kiln.no_grad():
            layer.weight.copy_(kiln.tensor(WEIGHT, dtype=dtype))
            layer.bias.copy_(kiln.tensor(BIAS, dtype=dtype))
    steps = []
    for step in range(STEPS):
        x = _tensor(_share(full_input(case, step), spec["split"], rank), dtype).requires_grad_()
        out = layer(x)
        out.backward(_tensor(_share(full_grad_output(case, step), spec["split"], rank), dtype))
        steps.append({"out": _lists(out), "grad": _lists(x.grad)})
        param_grads = [_lists(p.grad) for p in layer.parameters()]
        layer.zero_grad()
    layer.eval()
    x = _tensor(_share(full_input(case, 0), spec["split"], rank), dtype)
    return {"steps": steps, "param_grads": param_grads, "eval": _lists(layer(x)),
            "buffers": {name: _lists(b) for name, b in layer.named_buffers()}}


def cnn(nn):
    """A small CNN whose BatchNorm2d/BatchNorm1d layers convert_sync_batchnorm replaces."""
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 4 * 4, 5), nn.BatchNorm1d(5), nn.Tanh())


CNN_SPLIT = (2, 4)


def cnn_batch() -> np.ndarray:
    return np.random.default_rng(3).standard_normal((sum(CNN_SPLIT), 2, 4, 4))


def _run_cnn(rank: int, initial: list) -> dict:
    model = kiln.nn.SyncBatchNorm.convert_sync_batchnorm(cnn(kiln.nn).double())
    with kiln.no_grad():
        for p, values in zip(model.parameters(), initial):
            p.copy_(kiln.tensor(values, dtype=kiln.float64))
    x = _tensor(_share(cnn_batch(), CNN_SPLIT, rank), kiln.float64).requires_grad_()
    out = model(x)
    (out * out).sum().backward()
    return {"types": [type(m).__name__ for m in model.modules()], "out": _lists(out), "grad": _lists(x.grad),
            "param_grads": [_lists(p.grad) for p in model.parameters()],
            "buffers": {name: _lists(b) for name, b in model.named_buffers()}}


def _too_few_values(rank: int) -> str:
    """One value per channel over the whole group (rank 0 has one sample, rank 1 none): torch's error."""
    layer = kiln.nn.SyncBatchNorm(CHANNELS).double()
    try:
        layer(kiln.zeros(1 - rank, CHANNELS, dtype=kiln.float64))
    except ValueError as error:
        return str(error)
    return "no error"


def sync_batchnorm_jobs(rank: int, world: int, initial_cnn: list) -> dict:
    """Every case of this world size; on 2 ranks also the converted CNN and the too-few-values error."""
    dist.init_process_group("gloo", timeout=TIMEOUT)
    try:
        results = {case: _run_case(rank, case) for case in cases_of(world)}
        if world == 2:
            results["cnn"] = _run_cnn(rank, initial_cnn)
            results["too_few_values"] = _too_few_values(rank)
    finally:
        dist.destroy_process_group()
    return results
