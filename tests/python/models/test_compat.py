"""The PyTorch-compatibility suite: the same small models built with torch and
with kiln from identical initial weights (torch's state_dict copied into kiln
through numpy), trained side by side for 20 optimizer steps on the same data;
losses and every parameter's gradient must agree at each step.

Tolerances are float32's: losses and gradients within rtol 1e-4 / atol 1e-5 of
torch's after up to 20 Adam steps (Adam's normalised updates carry float32
rounding differences forward, so the single-op default of 1.3e-6 is not reachable
over a trajectory)."""

import numpy as np
import pytest
import torch

import kiln
from frontend_ops import load_from_torch

STEPS = 20
LOSS_TOL = dict(rtol=1e-4, atol=1e-5)
GRAD_TOL = dict(rtol=1e-4, atol=1e-5)


def train_side_by_side(build, make_batch, make_optimizer, loss_of, steps=STEPS):
    torch.manual_seed(0)
    tmodel = build(torch)
    kmodel = build(kiln)
    load_from_torch(kmodel, tmodel)
    topt, kopt = make_optimizer(torch, tmodel), make_optimizer(kiln, kmodel)
    rng = np.random.default_rng(0)
    for step in range(steps):
        batch = make_batch(rng)
        tloss = loss_of(torch, tmodel, [torch.from_numpy(b.copy()) for b in batch])
        kloss = loss_of(kiln, kmodel, [kiln.from_numpy(b.copy()) for b in batch])
        np.testing.assert_allclose(kloss.item(), tloss.item(), err_msg=f"loss at step {step}", **LOSS_TOL)
        topt.zero_grad()
        kopt.zero_grad()
        tloss.backward()
        kloss.backward()
        tparams = dict(tmodel.named_parameters())
        kparams = dict(kmodel.named_parameters())
        assert list(kparams) == list(tparams)
        for name, tp in tparams.items():
            np.testing.assert_allclose(kparams[name].grad.numpy(), tp.grad.numpy(),
                                       err_msg=f"grad of {name} at step {step}", **GRAD_TOL)
        topt.step()
        kopt.step()
    # The parameters themselves are not compared: a gradient that is pure rounding noise (the key
    # projection's bias, which softmax cancels) becomes a full +-lr step under Adam in either library.


# --- the seed's MLP ----------------------------------------------------------------------------
def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))


def mlp_batch(rng):
    return [rng.standard_normal((64, 784)).astype(np.float32), rng.integers(0, 10, 64).astype(np.int64)]


def mlp_loss(lib, model, batch):
    return lib.nn.CrossEntropyLoss()(model(batch[0]), batch[1])


def test_mlp_adam_matches_torch():
    train_side_by_side(mlp, mlp_batch, lambda lib, m: lib.optim.Adam(m.parameters(), lr=1e-3), mlp_loss)


def test_mlp_sgd_momentum_matches_torch():
    train_side_by_side(mlp, mlp_batch, lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.05, momentum=0.9),
                       mlp_loss)


# --- a small CNN -------------------------------------------------------------------------------
def cnn(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d((1, 1)),
        nn.Flatten(), nn.Linear(8, 10))


def cnn_batch(rng):
    return [rng.standard_normal((8, 1, 12, 12)).astype(np.float32), rng.integers(0, 10, 8).astype(np.int64)]


def test_cnn_adam_matches_torch():
    train_side_by_side(cnn, cnn_batch, lambda lib, m: lib.optim.Adam(m.parameters(), lr=1e-3), mlp_loss)


# --- a GPT-style transformer: causal attention, weight tying, param-grouped AdamW ------------------
VOCAB, BLOCK, EMBED, HEADS, LAYERS = 40, 12, 32, 4, 2


def gpt(lib):
    nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(EMBED, 3 * EMBED)
            self.c_proj = nn.Linear(EMBED, EMBED)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(EMBED, dim=2)
            q = q.view(B, T, HEADS, C // HEADS).transpose(1, 2)
            k = k.view(B, T, HEADS, C // HEADS).transpose(1, 2)
            v = v.view(B, T, HEADS, C // HEADS).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(EMBED)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(EMBED)
            self.mlp = nn.Sequential(nn.Linear(EMBED, 4 * EMBED), nn.GELU(), nn.Linear(4 * EMBED, EMBED))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(VOCAB, EMBED), wpe=nn.Embedding(BLOCK, EMBED),
                h=nn.ModuleList([Block() for _ in range(LAYERS)]), ln_f=nn.LayerNorm(EMBED)))
            self.lm_head = nn.Linear(EMBED, VOCAB, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying

        def forward(self, idx, targets):
            B, T = idx.size()
            pos = lib.arange(0, T, dtype=lib.long)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    return GPT()


def grouped_adamw(lib, model):
    params = {n: p for n, p in model.named_parameters() if p.requires_grad}
    groups = [{"params": [p for p in params.values() if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}]
    return lib.optim.AdamW(groups, lr=3e-3, betas=(0.9, 0.95))


def gpt_batch(rng):
    data = rng.integers(0, VOCAB, (4, BLOCK + 1)).astype(np.int64)
    return [data[:, :-1], data[:, 1:]]


def gpt_loss(lib, model, batch):
    return model(batch[0], batch[1])


def test_gpt_causal_tied_grouped_adamw_matches_torch():
    model = gpt(kiln)
    assert model.lm_head.weight is model.transformer.wte.weight
    assert len(list(model.parameters())) == len(list(gpt(torch).parameters()))  # the tied weight counted once
    train_side_by_side(gpt, gpt_batch, grouped_adamw, gpt_loss)


# --- torch.nn's own encoder layer (MultiheadAttention) under a causal mask --------------------------
def encoder(lib):
    nn = lib.nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, EMBED)
            self.layer = nn.TransformerEncoderLayer(EMBED, HEADS, dim_feedforward=64, dropout=0.0,
                                                    batch_first=True)
            self.head = nn.Linear(EMBED, VOCAB)

        def forward(self, idx, targets):
            mask = nn.Transformer.generate_square_subsequent_mask(idx.size(1))
            x = self.layer(self.embed(idx), src_mask=mask, is_causal=True)
            logits = self.head(x)
            return nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))

    return Encoder()


def test_transformer_encoder_layer_matches_torch():
    train_side_by_side(encoder, gpt_batch, lambda lib, m: lib.optim.Adam(m.parameters(), lr=1e-3), gpt_loss,
                       steps=10)


def test_mlp_forward_matches_torch_with_ops_kiln_has():
    """What runs on every build: the seed MLP's linear layers, forward and backward."""
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.Linear(128, 10))
    k = kiln.nn.Sequential(kiln.nn.Linear(784, 128), kiln.nn.Linear(128, 10))
    load_from_torch(k, t)
    x = np.random.default_rng(0).standard_normal((64, 784)).astype(np.float32)
    kout, tout = k(kiln.from_numpy(x)), t(torch.from_numpy(x))
    np.testing.assert_allclose(kout.detach().numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-5)
    g = np.random.default_rng(1).standard_normal((64, 10)).astype(np.float32)
    kout.backward(kiln.from_numpy(g))
    tout.backward(torch.from_numpy(g))
    for (name, kp), (_, tp) in zip(k.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(kp.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-4, err_msg=name)
