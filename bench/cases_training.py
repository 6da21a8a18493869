"""Training steps, kiln against torch eager: the seed MLP (784-128-10, batch 64:
forward, cross_entropy, zero_grad, backward, Adam step) and one GPT-style block
(LayerNorm, causal self-attention through scaled_dot_product_attention, GELU MLP;
batch 8 x 64 tokens x 128 channels, AdamW). Both libraries start from the same
weights and run on one thread.

Issue target: step time no slower than torch's for both.
"""

from __future__ import annotations

from harness import Case

THREADS = 1


def seed_mlp_step(lib):
    """The seed MLP (784-128-10), Adam, cross_entropy on a batch of 64: (model, step(x, y) -> loss, x, y).
    Also the compile benchmarks' training step (compile_training_step.py, compile_step_latency.py)."""
    import numpy as np

    nn = lib.nn
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((64, 784)).astype(np.float32))
    y = lib.from_numpy(rng.integers(0, 10, 64).astype(np.int64))

    def step(x, y):
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return model, step, x, y


def _mlp_step(lib):
    model, step, x, y = seed_mlp_step(lib)
    return model, lambda: step(x, y)


def _gpt_block_step(lib, batch=8, tokens=64, channels=128, heads=4):
    import numpy as np

    from kiln.bench._gpt_mini import gpt_block_class

    F = lib.nn.functional
    model = gpt_block_class(lib, channels, heads)()
    opt = lib.optim.AdamW(model.parameters(), lr=3e-4)
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((batch, tokens, channels)).astype(np.float32))
    target = lib.from_numpy(rng.standard_normal((batch, tokens, channels)).astype(np.float32))

    def step():
        loss = F.mse_loss(model(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return model, step


def _training_case(name: str, build) -> Case:
    def make():
        import torch

        import kiln

        kiln.set_num_threads(THREADS)
        torch.set_num_threads(THREADS)
        torch.manual_seed(0)
        tmodel, tstep = build(torch)
        kmodel, kstep = build(kiln)
        kmodel.load_state_dict({k: kiln.from_numpy(v.detach().numpy().copy()) for k, v in tmodel.state_dict().items()})
        return kstep, tstep

    return Case(name, make=make, group="training")


def cases() -> list[Case]:
    return [_training_case("seed MLP step (784-128-10, b64, Adam)", _mlp_step),
            _training_case("GPT block step (8x64x128, 4 heads, AdamW)", _gpt_block_step)]
