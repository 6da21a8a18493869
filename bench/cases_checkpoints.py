"""Checkpoint cases: kiln.save / kiln.load against torch.save / torch.load on a
GPT-small-sized state_dict (~31M float32 parameters, 126 MB), to a file in a
temporary directory: save (kiln's is atomic: temporary file, fsync, rename),
load, and load with mmap=True. The notes give both files' sizes.

kiln is imported inside each case's setup, never at module import.
"""

from __future__ import annotations

import os
import tempfile
import types

from harness import Case

SHAPES = [(4096, 1024)] * 6 + [(1024,)] * 40 + [(1024, 1024)] * 6


def _setup() -> types.SimpleNamespace:
    import numpy
    import torch

    import kiln

    rng = numpy.random.default_rng(0)
    arrays = [rng.standard_normal(shape).astype(numpy.float32) for shape in SHAPES]
    folder = tempfile.mkdtemp(prefix="kiln-bench-ckpt-")
    libs = types.SimpleNamespace(kiln=kiln, torch=torch, folder=folder,
                                 kiln_sd={f"p{i}": kiln.from_numpy(a.copy()) for i, a in enumerate(arrays)},
                                 torch_sd={f"p{i}": torch.from_numpy(a.copy()) for i, a in enumerate(arrays)},
                                 kiln_path=os.path.join(folder, "kiln.pt"), torch_path=os.path.join(folder, "torch.pt"))
    kiln.save(libs.kiln_sd, libs.kiln_path)
    torch.save(libs.torch_sd, libs.torch_path)
    return libs


def _sizes(libs) -> dict:
    return {"kiln_bytes": os.path.getsize(libs.kiln_path), "torch_bytes": os.path.getsize(libs.torch_path)}


def cases() -> list[Case]:
    return [
        Case("save 126 MB state_dict", lambda libs: libs.kiln.save(libs.kiln_sd, libs.kiln_path),
             lambda libs: libs.torch.save(libs.torch_sd, libs.torch_path), setup=_setup, group="checkpoint",
             notes=_sizes),
        Case("load 126 MB state_dict", lambda libs: libs.kiln.load(libs.kiln_path),
             lambda libs: libs.torch.load(libs.torch_path), setup=_setup, group="checkpoint"),
        Case("load 126 MB state_dict mmap", lambda libs: libs.kiln.load(libs.kiln_path, mmap=True),
             lambda libs: libs.torch.load(libs.torch_path, mmap=True), setup=_setup, group="checkpoint"),
    ]
