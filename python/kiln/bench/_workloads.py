"""The report's fixed workloads, each written once against the torch-shaped API: a builder
takes ``lib`` (``kiln`` or ``torch``), ``compile_fn`` (None for eager, else ``kiln.compile`` or
``torch.compile``) and ``quick``, and returns a ``Step``. Inputs and initial weights come from
numpy with fixed seeds, so every column starts from the same numbers and the first call's
outputs can be checked against kiln eager's. What each builder compiles is the part a user
would: the function itself, a whole training step (forward, loss, zero_grad, backward and the
optimizer's step: kiln.compile captures it as one graph, torch.compile breaks at backward), or
the optimizer's ``step``."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from kiln.bench import _gpt_mini


@dataclass
class Step:
    call: Callable[[], object]      # one timed call; returns the tensor compared across columns
    compiled: object = None          # what compile_fn returned (graph breaks, kernel counts)
    losses: Optional[list] = None    # a training step's loss tensors, one per call, in call order


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    shape: Callable[[bool], str]    # quick -> a short description of the sizes
    build: Callable                  # (lib, compile_fn, quick) -> Step
    rtol: float = 1e-4               # agreement with kiln eager's first call (torch and kiln compiled)
    atol: float = 1e-5
    curve_calls: Optional[Callable[[bool], int]] = None   # a training step: calls made in all, for its loss curve


def _maybe_compile(fn, compile_fn):
    return fn if compile_fn is None else compile_fn(fn)


def _tensor(lib, array: np.ndarray):
    return lib.from_numpy(np.ascontiguousarray(array))


def _pointwise_size(quick: bool) -> int:
    return (1 << 18) if quick else (16 << 20)


def cheap_chain(x):
    return (((x * 2 + 1) * 0.5 - 3).relu().neg() + 1).abs() * 0.25


def transcendental_chain(x):
    return ((x * 2 + 1).sin().exp().tanh() - 0.5).relu().sqrt()


def _pointwise(chain):
    def build(lib, compile_fn, quick):
        x = _tensor(lib, np.random.default_rng(0).standard_normal(_pointwise_size(quick)).astype(np.float32))
        fn = _maybe_compile(chain, compile_fn)
        return Step(lambda: fn(x), fn)
    return build


ROWS_FULL, ROWS_QUICK, WIDTH = 8192, 512, 768   # GPT-small's hidden width; 8192 = 8 x 1024 tokens


def _rows(quick: bool) -> int:
    return ROWS_QUICK if quick else ROWS_FULL


def _softmax(lib, compile_fn, quick):
    x = _tensor(lib, np.random.default_rng(1).standard_normal((_rows(quick), WIDTH)).astype(np.float32))
    F = lib.nn.functional

    def softmax(x):
        return F.softmax(x, dim=-1)
    fn = _maybe_compile(softmax, compile_fn)
    return Step(lambda: fn(x), fn)


def _layer_norm(lib, compile_fn, quick):
    rng = np.random.default_rng(2)
    x = _tensor(lib, rng.standard_normal((_rows(quick), WIDTH)).astype(np.float32))
    w = _tensor(lib, (1 + 0.1 * rng.standard_normal(WIDTH)).astype(np.float32))
    b = _tensor(lib, (0.1 * rng.standard_normal(WIDTH)).astype(np.float32))
    F = lib.nn.functional

    def layer_norm(x, w, b):
        return F.layer_norm(x, (WIDTH,), w, b)
    fn = _maybe_compile(layer_norm, compile_fn)
    return Step(lambda: fn(x, w, b), fn)


def load_weights(lib, model, seed: int) -> None:
    """The same initial weights in every library: uniform(+-1/sqrt(fan_in)) for matrices, ones for
    LayerNorm weights, zeros for the other vectors (parameters in registration order)."""
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for name, p in model.named_parameters():
            shape = tuple(p.shape)
            if len(shape) == 1:
                value = np.ones(shape) if name.split(".")[-2].startswith("ln") and name.endswith("weight") \
                    else np.zeros(shape)
            else:
                bound = 1 / np.sqrt(shape[-1])
                value = rng.uniform(-bound, bound, shape)
            p.copy_(_tensor(lib, value.astype(np.float32)))


def _training_step(model, forward_loss, opt, compile_fn, next_batch):
    """One training step, compiled whole: forward and loss, zero_grad, backward, the optimizer; the loss kept."""
    def step(*batch):
        loss = forward_loss(*batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()
    fn = _maybe_compile(step, compile_fn)
    losses = []

    def call():
        loss = fn(*next_batch())
        losses.append(loss)
        return loss
    return Step(call, fn, losses)


MLP_BATCH = 64


def _mlp_step(lib, compile_fn, quick):
    """The seed article's MLP (784-128-10, ReLU; Adam, cross-entropy; batch 64), examples/demo.py's model."""
    nn = lib.nn
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    load_weights(lib, model, seed=3)
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(4)
    x = _tensor(lib, rng.standard_normal((MLP_BATCH, 784)).astype(np.float32))
    y = _tensor(lib, rng.integers(0, 10, MLP_BATCH).astype(np.int64))
    loss_fn = nn.CrossEntropyLoss()

    def forward_loss(x, y):
        return loss_fn(model(x), y)
    return _training_step(model, forward_loss, opt, compile_fn, lambda: (x, y))


GPT_FULL = _gpt_mini.GPTConfig(block=64, channels=128, heads=4, layers=2, batch=8)
GPT_QUICK = _gpt_mini.GPTConfig(block=32, channels=32, heads=2, layers=2, batch=4)
GPT_BATCHES = 64


def _gpt_config(quick: bool) -> _gpt_mini.GPTConfig:
    return GPT_QUICK if quick else GPT_FULL


def _gpt_step(lib, compile_fn, quick):
    cfg = _gpt_config(quick)
    ids, vocab = _gpt_mini.encoded_text()
    model = _gpt_mini.build_model(lib, cfg, vocab)
    load_weights(lib, model, seed=5)
    opt = lib.optim.AdamW(model.parameters(), lr=3e-3)
    data = [(_tensor(lib, x), _tensor(lib, y)) for x, y in _gpt_mini.batches(ids, cfg, GPT_BATCHES)]
    calls = itertools.count()

    def forward_loss(idx, targets):
        return model(idx, targets)
    return _training_step(model, forward_loss, opt, compile_fn, lambda: data[next(calls) % len(data)])


ADAMW_PARAMS = 100


def _adamw_shape(quick: bool) -> tuple:
    return (32, 32) if quick else (256, 256)


def _adamw_update(lib, compile_fn, quick):
    """AdamW.step over 100 parameters with fixed gradients (the update alone, no model)."""
    rng = np.random.default_rng(6)
    shape = _adamw_shape(quick)
    params = []
    for _ in range(ADAMW_PARAMS):
        p = _tensor(lib, rng.standard_normal(shape).astype(np.float32)).requires_grad_()
        p.grad = _tensor(lib, rng.standard_normal(shape).astype(np.float32))
        params.append(p)
    opt = lib.optim.AdamW(params, lr=1e-3, weight_decay=1e-2)
    fn = _maybe_compile(opt.step, compile_fn)

    def call():
        fn()
        return params[0]
    return Step(call, fn)


WORKLOADS = [
    Workload("pointwise_cheap", "pointwise chain, cheap arithmetic (8 ops)",
             lambda q: f"[{_pointwise_size(q)}] float32", _pointwise(cheap_chain)),
    # sqrt(relu(tanh(.) - 0.5)) turns one float ulp of tanh near 0.5 (6e-8) into up to 2.4e-4: torch's
    # and kiln's tanh differ by that much there (measured at 16M), so the agreement tolerance is wider.
    Workload("pointwise_transcendental", "pointwise chain, sin/exp/tanh (7 ops)",
             lambda q: f"[{_pointwise_size(q)}] float32", _pointwise(transcendental_chain), atol=1e-3),
    Workload("softmax", "softmax over the last dim", lambda q: f"[{_rows(q)}, {WIDTH}]", _softmax),
    Workload("layer_norm", "layer_norm with weight and bias", lambda q: f"[{_rows(q)}, {WIDTH}]", _layer_norm),
    Workload("mlp_train_step", "seed MLP training step (784-128-10, Adam)",
             lambda q: f"batch {MLP_BATCH}", _mlp_step, rtol=1e-4, atol=1e-5),
    Workload("gpt_mini_train_step", "GPT-mini training step on bundled text (AdamW)",
             lambda q: "{layers} layers, {channels} ch, {heads} heads, {batch}x{block} tokens".format(
                 **_gpt_config(q).__dict__), _gpt_step, rtol=1e-3, atol=1e-4,
             curve_calls=lambda q: 40 if q else 150),
    Workload("adamw_update", f"AdamW update over {ADAMW_PARAMS} parameters",
             lambda q: f"{ADAMW_PARAMS} x {list(_adamw_shape(q))}", _adamw_update),
]


def select(names: Optional[list]) -> list:
    """The workloads named (a name or a substring of one), in the report's order; all when ``names`` is empty."""
    if not names:
        return list(WORKLOADS)
    chosen = [w for w in WORKLOADS if any(n in w.name for n in names)]
    unknown = [n for n in names if not any(n in w.name for w in WORKLOADS)]
    if unknown:
        raise ValueError(f"kiln.bench: no workload matches {unknown}; the workloads are "
                         f"{', '.join(w.name for w in WORKLOADS)}")
    return chosen
