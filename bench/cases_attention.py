"""scaled_dot_product_attention at GPT-small shapes (12 heads of 64, seq 256
and 1024, batch 2 on this 2-core machine): plain and causal, forward and
forward + backward, kiln.nn.functional against torch.nn.functional on 2
threads. Both sides take their fused CPU kernels (kiln's
_scaled_dot_product_flash_attention_for_cpu, eager/ops/attention.yaml).
Also: dropout 0.1 at [2, 12, 256, 64] (kiln's fused dropout op; torch's CPU
flash kernel has no dropout, so torch runs its math path), and one long head
[1, 1, 4096, 64] (few (batch, head) pairs: the backward splits the keys).

    python bench/run.py --filter attention/ [--quick]
"""

from __future__ import annotations

from harness import Case

THREADS = 2
SHAPES = ((2, 12, 256, 64), (2, 12, 1024, 64))


def _case(shape: tuple, causal: bool, backward: bool, dropout_p: float = 0.0) -> Case:
    previous: list[tuple[int, int]] = []

    def make():
        import numpy as np
        import torch

        import kiln
        import kiln.nn.functional as KF

        previous.append((kiln.get_num_threads(), torch.get_num_threads()))
        kiln.set_num_threads(THREADS)
        torch.set_num_threads(THREADS)
        rng = np.random.default_rng(0)
        arrays = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]
        k = [kiln.tensor(a, requires_grad=backward) for a in arrays[:3]]
        t = [torch.tensor(a, requires_grad=backward) for a in arrays[:3]]
        kg, tg = kiln.tensor(arrays[3]), torch.tensor(arrays[3])
        tf = torch.nn.functional.scaled_dot_product_attention
        if not backward:
            return (lambda: KF.scaled_dot_product_attention(*k, is_causal=causal, dropout_p=dropout_p)), \
                (lambda: tf(*t, is_causal=causal, dropout_p=dropout_p))

        def kiln_step():
            KF.scaled_dot_product_attention(*k, is_causal=causal, dropout_p=dropout_p).backward(kg)

        def torch_step():
            tf(*t, is_causal=causal, dropout_p=dropout_p).backward(tg)

        return kiln_step, torch_step

    def notes():
        import torch

        import kiln

        kt, tt = previous.pop()
        kiln.set_num_threads(kt)
        torch.set_num_threads(tt)
        return {"threads": THREADS, "shape": list(shape), "dropout_p": dropout_p}

    name = (f"sdpa {'x'.join(map(str, shape))}{' causal' if causal else ''}"
            f"{f' dropout {dropout_p}' if dropout_p else ''} {'fwd+bwd' if backward else 'fwd'} {THREADS}T")
    return Case(name, make=make, notes=notes, group="attention")


def cases() -> list[Case]:
    plain = [_case(shape, causal, backward) for shape in SHAPES for causal in (False, True)
             for backward in (False, True)]
    dropout = [_case((2, 12, 256, 64), causal, backward, 0.1) for causal in (False, True) for backward in (False, True)]
    long_head = [_case((1, 1, 4096, 64), causal, True) for causal in (False, True)]
    return plain + dropout + long_head
