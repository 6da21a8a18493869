"""DataLoader cases: one epoch over a dataset whose __getitem__ costs ~1 ms
(a sleep, like reading a file), batch 16, with 0 and with 2 worker processes,
kiln against torch. The ratio of the two kiln medians is the workers' speedup
(issue 28 asks for >= 1.7x with 2 workers).

kiln is imported inside each case's setup, never at module import.
"""

from __future__ import annotations

import time
import types

from harness import Case

LENGTH = 512
COST_S = 0.001


def _setup() -> types.SimpleNamespace:
    import torch
    import torch.utils.data as tdata

    import kiln
    import kiln.utils.data as kdata

    class KilnCostly(kdata.Dataset):
        def __len__(self):
            return LENGTH

        def __getitem__(self, i):
            time.sleep(COST_S)
            return kiln.full((3, 8, 8), float(i)), i

    class TorchCostly(tdata.Dataset):
        def __len__(self):
            return LENGTH

        def __getitem__(self, i):
            time.sleep(COST_S)
            return torch.full((3, 8, 8), float(i)), i

    return types.SimpleNamespace(kdata=kdata, tdata=tdata, kiln_dataset=KilnCostly(), torch_dataset=TorchCostly())


def _epoch(loader_class, dataset, workers: int) -> None:
    for _ in loader_class(dataset, batch_size=16, num_workers=workers):
        pass


def _case(workers: int) -> Case:
    return Case(f"epoch of {LENGTH} x 1 ms samples, {workers} workers",
                lambda libs: _epoch(libs.kdata.DataLoader, libs.kiln_dataset, workers),
                lambda libs: _epoch(libs.tdata.DataLoader, libs.torch_dataset, workers),
                setup=_setup, group="dataloader")


def cases() -> list[Case]:
    return [_case(0), _case(2)]
