"""Autograd cases: the engine's cost per node, and the seed MLP's forward plus backward.

- ``per node``: a chain of N tiny (1-element) ops, forward then backward; the
  time is dominated by recording nodes and walking them, so the kiln/torch
  ratio of the chain is the ratio of the overheads per node.
- ``mlp``: the seed article's MLP (784-128-10, batch 64) forward and backward
  (the gradients accumulate into the parameters' .grad, as a training step's
  do), without the loss and the optimizer, which bench/cases_training.py adds.

    python bench/run.py --filter autograd/
"""

from __future__ import annotations

from harness import Case

CHAIN = 50  # ops per tiny chain: the per-node cost dominates


def _libs():
    import torch

    import kiln

    return kiln, torch


def _make_chain():
    kiln, torch = _libs()

    def make(lib):
        x = lib.ones(1, requires_grad=True)
        seed = lib.ones(1)

        def step():
            y = x
            for _ in range(CHAIN // 2):
                y = y * 1.0001
                y = y + 0.5
            y.backward(seed)
        return step

    return make(kiln), make(torch)


def _make_mlp():
    import numpy as np

    kiln, torch = _libs()
    rng = np.random.default_rng(0)
    arrays = {
        "x": rng.standard_normal((64, 784)).astype(np.float32),
        "w1": (rng.standard_normal((128, 784)) / 28).astype(np.float32),
        "b1": np.zeros(128, dtype=np.float32),
        "w2": (rng.standard_normal((10, 128)) / 11).astype(np.float32),
        "b2": np.zeros(10, dtype=np.float32),
    }

    def make(lib):
        x = lib.tensor(arrays["x"])
        params = {k: lib.tensor(v, requires_grad=True) for k, v in arrays.items() if k != "x"}
        seed = lib.ones(64, 10)
        relu = getattr(lib, "relu", None) or (lambda t: t.clamp_min(0))
        linear = lib.nn.functional.linear if lib is torch else getattr(lib, "linear")

        def step():
            h = relu(linear(x, params["w1"], params["b1"]))
            out = linear(h, params["w2"], params["b2"])
            out.backward(seed)
        return step

    return make(kiln), make(torch)


def cases() -> list[Case]:
    return [
        Case(name=f"per node: chain of {CHAIN} 1-element ops, forward + backward", group="autograd", make=_make_chain),
        Case(name="mlp 784-128-10 batch 64: forward + backward", group="autograd", make=_make_mlp),
    ]
