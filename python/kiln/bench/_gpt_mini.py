"""GPT-mini: a two-layer character-level GPT written once against the torch-shaped API,
so the same code builds kiln's model and torch's (``lib`` is ``kiln`` or ``torch``),
and its training data: the text bundled in data/kiln_notes.txt."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

TEXT_PATH = Path(__file__).resolve().parent / "data" / "kiln_notes.txt"


@dataclass(frozen=True)
class GPTConfig:
    block: int        # tokens per sequence
    channels: int
    heads: int
    layers: int
    batch: int


def encoded_text() -> tuple[np.ndarray, int]:
    """The bundled text as int64 character ids, and the vocabulary size."""
    text = TEXT_PATH.read_text(encoding="utf-8")
    vocab = sorted(set(text))
    index = {ch: i for i, ch in enumerate(vocab)}
    return np.array([index[ch] for ch in text], dtype=np.int64), len(vocab)


def batches(ids: np.ndarray, cfg: GPTConfig, count: int, seed: int = 0) -> list:
    """``count`` (inputs, targets) pairs of [batch, block] windows, targets shifted by one; the same
    for every library, so every column trains on the same sequence of batches."""
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(count):
        starts = rng.integers(0, len(ids) - cfg.block - 1, cfg.batch)
        x = np.stack([ids[s:s + cfg.block] for s in starts])
        y = np.stack([ids[s + 1:s + cfg.block + 1] for s in starts])
        pairs.append((x, y))
    return pairs


def gpt_block_class(lib, channels: int, heads: int):
    """The pre-norm transformer block of ``lib`` (causal self-attention through
    scaled_dot_product_attention and a GELU MLP, each with a residual add), as a Module class;
    the benchmarks' single-block training step uses it too."""
    nn, F = lib.nn, lib.nn.functional
    C, H = channels, heads

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(C)
            self.c_attn = nn.Linear(C, 3 * C)
            self.c_proj = nn.Linear(C, C)
            self.ln_2 = nn.LayerNorm(C)
            self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))

        def forward(self, x):
            B, T, _ = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).contiguous().view(B, T, C)
            x = x + self.c_proj(y)
            return x + self.mlp(self.ln_2(x))

    return Block


def build_model(lib, cfg: GPTConfig, vocab: int):
    """A GPT-mini module of ``lib`` (token and position embeddings, ``cfg.layers`` pre-norm blocks of
    causal self-attention and a GELU MLP, a final LayerNorm and an untied head)."""
    nn, F = lib.nn, lib.nn.functional
    C = cfg.channels
    Block = gpt_block_class(lib, cfg.channels, cfg.heads)

    class GPTMini(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, C)
            self.pos = nn.Embedding(cfg.block, C)
            self.blocks = nn.Sequential(*[Block() for _ in range(cfg.layers)])
            self.ln_f = nn.LayerNorm(C)
            self.head = nn.Linear(C, vocab, bias=False)
            self.register_buffer("positions", lib.arange(cfg.block))

        def forward(self, idx, targets):
            B, T = idx.shape
            x = self.tok(idx) + self.pos(self.positions)
            logits = self.head(self.ln_f(self.blocks(x)))
            return F.cross_entropy(logits.view(B * T, vocab), targets.view(B * T))

    return GPTMini()
