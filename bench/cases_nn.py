"""Neural-network op cases at GPT-small shapes (d_model 768, 12 heads, seq 256,
vocab 50257), the batch scaled down for this 2-core machine: softmax and
log_softmax over attention scores [2, 12, 256, 256], layer_norm and rms_norm
over [2 * 256, 768], cross_entropy over [256, 50257] logits, embedding of
[2, 256] tokens from a [50257, 768] table; sort and topk over [64, 4096] rows and
one 1M vector; training-mode batch_norm and 8-group group_norm over
[32, 64, 32, 32]; conv2d (3x3, padding 1) and max_pool2d (2x2) at MNIST-CNN
shapes, batch 64; LSTM and GRU layers over word-language-model shapes;
forward, and forward + backward.
Both sides run on 2 threads (set in make(), put back in notes()).

    python bench/run.py --filter nn/ [--quick]
"""

from __future__ import annotations

from harness import Case

THREADS = 2


def _libs():
    import torch

    import kiln

    return kiln, torch


def _inputs(kiln, torch, shape, requires_grad, seed=0):
    import numpy as np

    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return (kiln.tensor(values, requires_grad=requires_grad),
            torch.tensor(values, requires_grad=requires_grad))


def _case(name: str, build, backward: bool) -> Case:
    previous: list[tuple[int, int]] = []

    def make():
        kiln, torch = _libs()
        previous.append((kiln.get_num_threads(), torch.get_num_threads()))
        kiln.set_num_threads(THREADS)
        torch.set_num_threads(THREADS)
        kfn, tfn = build(kiln, torch, backward)
        return kfn, tfn

    def notes():
        kiln, torch = _libs()
        k, t = previous.pop()
        kiln.set_num_threads(k)
        torch.set_num_threads(t)
        return {"threads": THREADS}

    return Case(f"{name} {'fwd+bwd' if backward else 'fwd'} {THREADS}T", make=make, notes=notes, group="nn")


def _unary(shape, kiln_op, torch_op):
    def build(kiln, torch, backward):
        k, t = _inputs(kiln, torch, shape, backward)
        if not backward:
            return (lambda: kiln_op(kiln, k)), (lambda: torch_op(torch, t))
        kg, tg = _inputs(kiln, torch, shape, False, seed=1)

        def kiln_step():
            kiln_op(kiln, k).backward(kg)

        def torch_step():
            torch_op(torch, t).backward(tg)

        return kiln_step, torch_step

    return build


def _cross_entropy(kiln, torch, backward):
    import numpy as np

    rows, vocab = 256, 50257
    k, t = _inputs(kiln, torch, (rows, vocab), backward)
    target = np.random.default_rng(2).integers(0, vocab, size=rows)
    kt, tt = kiln.tensor(target), torch.tensor(target)
    F = kiln._C._functions
    ce = torch.nn.functional.cross_entropy
    if not backward:
        return (lambda: F.cross_entropy_loss(k, kt)), (lambda: ce(t, tt))
    return (lambda: F.cross_entropy_loss(k, kt).backward()), (lambda: ce(t, tt).backward())


def _embedding(kiln, torch, backward):
    import numpy as np

    kw, tw = _inputs(kiln, torch, (50257, 768), backward)
    idx = np.random.default_rng(3).integers(0, 50257, size=(2, 256))
    ki, ti = kiln.tensor(idx), torch.tensor(idx)
    F = kiln._C._functions
    kg, tg = _inputs(kiln, torch, (2, 256, 768), False, seed=4)
    if not backward:
        return (lambda: F.embedding(kw, ki)), (lambda: torch.embedding(tw, ti))
    return (lambda: F.embedding(kw, ki).backward(kg)), (lambda: torch.embedding(tw, ti).backward(tg))


def _topk(shape, k):
    """topk k along the last dim; the backward takes an upstream gradient of the values' shape."""
    def build(kiln, torch, backward):
        x, t = _inputs(kiln, torch, shape, backward)
        if not backward:
            return (lambda: x.topk(k).values), (lambda: t.topk(k).values)
        kg, tg = _inputs(kiln, torch, tuple(shape[:-1]) + (k,), False, seed=1)
        return (lambda: x.topk(k).values.backward(kg)), (lambda: t.topk(k).values.backward(tg))

    return build


def _conv2d(in_shape, out_channels, padding, onednn=True):
    """conv2d with a 3x3 kernel and bias, weights and input needing grad when timed with backward.
    onednn=False times torch with torch.backends.mkldnn off: its im2col + GEMM path, kiln's own design
    (torch's oneDNN path measured slower than that on this machine)."""

    def build(kiln, torch, backward):
        if not onednn:
            kfn, tfn = _conv2d_fns(kiln, torch, backward)

            def torch_without_onednn():
                with torch.backends.mkldnn.flags(enabled=False):
                    tfn()

            return kfn, torch_without_onednn
        return _conv2d_fns(kiln, torch, backward)

    def _conv2d_fns(kiln, torch, backward):
        kx, tx = _inputs(kiln, torch, in_shape, backward)
        kw, tw = _inputs(kiln, torch, (out_channels, in_shape[1], 3, 3), backward, seed=1)
        kb, tb = _inputs(kiln, torch, (out_channels,), backward, seed=2)
        kconv, tconv = kiln.nn.functional.conv2d, torch.nn.functional.conv2d
        if not backward:
            return (lambda: kconv(kx, kw, kb, padding=padding)), (lambda: tconv(tx, tw, tb, padding=padding))
        out_shape = (in_shape[0], out_channels, in_shape[2] + 2 * padding - 2, in_shape[3] + 2 * padding - 2)
        kg, tg = _inputs(kiln, torch, out_shape, False, seed=3)
        return (lambda: kconv(kx, kw, kb, padding=padding).backward(kg)), \
            (lambda: tconv(tx, tw, tb, padding=padding).backward(tg))

    return build


def _batch_norm(kiln, torch, backward):
    """Training-mode batch_norm over [32, 64, 32, 32] with weight, bias and running statistics."""
    k, t = _inputs(kiln, torch, (32, 64, 32, 32), backward)
    kw, tw = _inputs(kiln, torch, (64,), backward, seed=5)
    kb, tb = _inputs(kiln, torch, (64,), backward, seed=6)
    km, tm = kiln.zeros(64), torch.zeros(64)
    kv, tv = kiln.ones(64), torch.ones(64)
    kf, tf = kiln.nn.functional.batch_norm, torch.nn.functional.batch_norm
    if not backward:
        return (lambda: kf(k, km, kv, kw, kb, True)), (lambda: tf(t, tm, tv, tw, tb, True))
    kg, tg = _inputs(kiln, torch, (32, 64, 32, 32), False, seed=7)
    return (lambda: kf(k, km, kv, kw, kb, True).backward(kg)), (lambda: tf(t, tm, tv, tw, tb, True).backward(tg))


def _group_norm(kiln, torch, backward):
    """group_norm with 8 groups over [32, 64, 32, 32] with weight and bias."""
    k, t = _inputs(kiln, torch, (32, 64, 32, 32), backward)
    kw, tw = _inputs(kiln, torch, (64,), backward, seed=5)
    kb, tb = _inputs(kiln, torch, (64,), backward, seed=6)
    kf, tf = kiln.nn.functional.group_norm, torch.nn.functional.group_norm
    if not backward:
        return (lambda: kf(k, 8, kw, kb)), (lambda: tf(t, 8, tw, tb))
    kg, tg = _inputs(kiln, torch, (32, 64, 32, 32), False, seed=7)
    return (lambda: kf(k, 8, kw, kb).backward(kg)), (lambda: tf(t, 8, tw, tb).backward(tg))

def _conv_pool_builders() -> dict:
    """The MNIST-CNN shapes: batch 64, 1->32 channels on 28x28, 32->64 on 14x14, 2x2 max pooling."""
    return {
        "conv2d [64,1,28,28] 1->32 3x3 pad 1": _conv2d((64, 1, 28, 28), 32, 1),
        "conv2d [64,32,14,14] 32->64 3x3 pad 1": _conv2d((64, 32, 14, 14), 64, 1),
        "conv2d [64,1,28,28] 1->32 3x3 pad 1 (torch without oneDNN)": _conv2d((64, 1, 28, 28), 32, 1, onednn=False),
        "conv2d [64,32,14,14] 32->64 3x3 pad 1 (torch without oneDNN)": _conv2d((64, 32, 14, 14), 64, 1,
                                                                               onednn=False),
        "max_pool2d [64,32,28,28] 2x2": _max_pool2d,
    }


def _max_pool2d(kiln, torch, backward):
    kx, tx = _inputs(kiln, torch, (64, 32, 28, 28), backward)
    kpool, tpool = kiln.nn.functional.max_pool2d, torch.nn.functional.max_pool2d
    if not backward:
        return (lambda: kpool(kx, 2)), (lambda: tpool(tx, 2))
    kg, tg = _inputs(kiln, torch, (64, 32, 14, 14), False, seed=1)
    return (lambda: kpool(kx, 2).backward(kg)), (lambda: tpool(tx, 2).backward(tg))


def _recurrent(kind, steps, batch, features, hidden):
    """An nn.LSTM / nn.GRU (torch's weights copied into kiln's) over [steps, batch, features]."""
    def build(kiln, torch, backward):
        tmod = getattr(torch.nn, kind)(features, hidden)
        kmod = getattr(kiln.nn, kind)(features, hidden)
        for (_, tp), (_, kp) in zip(tmod.named_parameters(), kmod.named_parameters()):
            kp.data.copy_(kiln.tensor(tp.detach().numpy()))
        kx, tx = _inputs(kiln, torch, (steps, batch, features), backward)
        if not backward:
            def kiln_fwd():
                with kiln.no_grad():
                    return kmod(kx)

            def torch_fwd():
                with torch.no_grad():
                    return tmod(tx)
            return kiln_fwd, torch_fwd
        return (lambda: kmod(kx)[0].sum().backward()), (lambda: tmod(tx)[0].sum().backward())

    return build


def cases() -> list[Case]:
    scores = (2, 12, 256, 256)
    hidden = (512, 768)
    builders = {
        "softmax [2,12,256,256] dim -1": _unary(scores, lambda kiln, x: kiln._C._functions.softmax(x, -1),
                                                lambda torch, x: torch.softmax(x, -1)),
        "log_softmax [2,12,256,256] dim -1": _unary(scores, lambda kiln, x: kiln._C._functions.log_softmax(x, -1),
                                                    lambda torch, x: torch.log_softmax(x, -1)),
        "layer_norm [512,768]": _unary(hidden, lambda kiln, x: kiln._C._functions.layer_norm(x, [768]),
                                       lambda torch, x: torch.nn.functional.layer_norm(x, (768,))),
        "rms_norm [512,768]": _unary(hidden, lambda kiln, x: kiln._C._functions.rms_norm(x, [768]),
                                     lambda torch, x: torch.nn.functional.rms_norm(x, (768,))),
        "cross_entropy [256,50257]": _cross_entropy,
        "embedding [50257,768][2,256]": _embedding,
        # sorting (eager/ops/sorting.yaml) and the channel norms (batch_norm, group_norm)
        "sort [64,4096] dim -1": _unary((64, 4096), lambda kiln, x: x.sort(-1).values,
                                        lambda torch, x: x.sort(-1).values),
        "sort [1M]": _unary((1 << 20,), lambda kiln, x: x.sort().values, lambda torch, x: x.sort().values),
        "topk 10 [64,4096] dim -1": _topk((64, 4096), 10),
        "topk 1000 [1M]": _topk((1 << 20,), 1000),
        "batch_norm train [32,64,32,32]": _batch_norm,
        "group_norm 8 groups [32,64,32,32]": _group_norm,
        **_conv_pool_builders(),
        # recurrent layers (nn/modules/rnn.py, Note [Fused recurrent cells])
        "LSTM 256->256 [35,20]": _recurrent("LSTM", 35, 20, 256, 256),
        "GRU 256->256 [35,20]": _recurrent("GRU", 35, 20, 256, 256),
        "LSTM 64->128 [100,8]": _recurrent("LSTM", 100, 8, 64, 128),
    }
    return [_case(name, build, backward) for name, build in builders.items() for backward in (False, True)]
