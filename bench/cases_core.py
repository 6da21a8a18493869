"""Core cases: tensor creation, the numpy round trip and the caching allocator.

kiln is imported inside each case's setup, never at module import, so a
``--filter`` that selects none of these cases does not need kiln built.
"""

from __future__ import annotations

import types

from harness import Case

SMALL, MEDIUM, LARGE = 16, 64 * 1024, 16 * 1024 * 1024  # float32 elements: 64 B, 256 KiB, 64 MiB
LIST_LENGTH = 1000
ROUND_TRIP_LENGTH = 1024 * 1024
TINY_BLOCK_ELEMENTS = 64  # 256 B of float32


def _libraries() -> types.SimpleNamespace:
    """Both libraries and numpy, imported when a case is about to run."""
    import numpy
    import torch

    import kiln

    return types.SimpleNamespace(kiln=kiln, torch=torch, numpy=numpy)


def _with_inputs(**make_inputs):
    """A setup that imports the libraries and adds inputs built from them: ``name=lambda libs: ...``."""

    def setup() -> types.SimpleNamespace:
        libs = _libraries()
        for name, make in make_inputs.items():
            setattr(libs, name, make(libs))
        return libs

    return setup


def _creation_case(op: str, elements: int, *extra_args) -> Case:
    """``op((elements,), *extra_args, dtype=float32)`` on both sides."""

    def kiln_fn(libs):
        return getattr(libs.kiln, op)((elements,), *extra_args, dtype=libs.kiln.float32)

    def torch_fn(libs):
        return getattr(libs.torch, op)((elements,), *extra_args, dtype=libs.torch.float32)

    return Case(f"{op} {elements} f32", kiln_fn, torch_fn, setup=_with_inputs(), group="creation")


def _creation_cases() -> list[Case]:
    # empty of LARGE is the allocator group's 64 MiB case.
    cases = [_creation_case("empty", n) for n in (SMALL, MEDIUM)]
    cases += [_creation_case("zeros", n) for n in (SMALL, MEDIUM, LARGE)]
    cases += [_creation_case("ones", MEDIUM), _creation_case("full", MEDIUM, 1.5)]
    cases.append(
        Case(
            f"arange {MEDIUM}",
            lambda libs: libs.kiln.arange(MEDIUM),
            lambda libs: libs.torch.arange(MEDIUM),
            setup=_with_inputs(),
            group="creation",
        )
    )
    cases.append(
        Case(
            f"tensor from {LIST_LENGTH}-float list",
            lambda libs: libs.kiln.tensor(libs.values),
            lambda libs: libs.torch.tensor(libs.values),
            setup=_with_inputs(values=lambda libs: [i * 0.5 for i in range(LIST_LENGTH)]),
            group="creation",
        )
    )
    return cases


def _numpy_cases() -> list[Case]:
    return [
        Case(
            f"from_numpy(a).numpy() {ROUND_TRIP_LENGTH} f32",
            lambda libs: libs.kiln.from_numpy(libs.array).numpy(),
            lambda libs: libs.torch.from_numpy(libs.array).numpy(),
            setup=_with_inputs(array=lambda libs: libs.numpy.ones(ROUND_TRIP_LENGTH, dtype=libs.numpy.float32)),
            group="numpy",
        )
    ]


def _memory_stats(libs) -> dict:
    """kiln's allocator statistics after the case, when kiln exposes them."""
    if not hasattr(libs.kiln, "memory_stats"):
        return {}
    return {"kiln_memory_stats": dict(libs.kiln.memory_stats())}


def _allocator_case(label: str, elements: int) -> Case:
    """Allocate and free at once: steady state should be served from the cache."""
    return Case(
        f"empty {label} freed at once",
        lambda libs: libs.kiln.empty((elements,), dtype=libs.kiln.float32),
        lambda libs: libs.torch.empty((elements,), dtype=libs.torch.float32),
        setup=_with_inputs(),
        group="allocator",
        notes=_memory_stats,
    )


def _allocator_cases() -> list[Case]:
    return [_allocator_case("256 B", TINY_BLOCK_ELEMENTS), _allocator_case("64 MiB", LARGE)]


def cases() -> list[Case]:
    """Every core case."""
    return _creation_cases() + _numpy_cases() + _allocator_cases()
