"""Random cases: rand and randn (16: the per-call cost; 1M and 16M float32), and the other samplers,
kiln (Philox4x32-10, SIMD) against torch (mt19937) on the same sizes.

kiln is imported inside each case's setup, so a ``--filter`` that selects none of
these cases does not need kiln built. Both sides draw from a generator seeded
once in setup, so the timed calls include the generator's locking and advance.
"""

from __future__ import annotations

import types

from harness import Case

M1, M16 = 1 << 20, 1 << 24


def _setup(**make_inputs):
    def setup() -> types.SimpleNamespace:
        import torch

        import kiln

        libs = types.SimpleNamespace(kiln=kiln, torch=torch, kiln_gen=kiln.Generator().manual_seed(0),
                                     torch_gen=torch.Generator().manual_seed(0))
        for name, make in make_inputs.items():
            setattr(libs, name, make(libs))
        return libs

    return setup


def _factory_case(op: str, elements: int, label: str, dtype: str = "float32") -> Case:
    def kiln_fn(libs):
        return getattr(libs.kiln, op)(elements, generator=libs.kiln_gen, dtype=getattr(libs.kiln, dtype))

    def torch_fn(libs):
        return getattr(libs.torch, op)(elements, generator=libs.torch_gen, dtype=getattr(libs.torch, dtype))

    return Case(f"{op} {label} {dtype}", kiln_fn, torch_fn, setup=_setup(), group="random")


def _in_place_case(name: str, method: str, args: tuple, elements: int, dtype: str = "float32") -> Case:
    def setup_inputs(libs):
        return (libs.kiln.empty(elements, dtype=getattr(libs.kiln, dtype)),
                libs.torch.empty(elements, dtype=getattr(libs.torch, dtype)))

    return Case(
        name,
        lambda libs: getattr(libs.buffers[0], method)(*args, generator=libs.kiln_gen),
        lambda libs: getattr(libs.buffers[1], method)(*args, generator=libs.torch_gen),
        setup=_setup(buffers=setup_inputs),
        group="random",
    )


def cases() -> list[Case]:
    out = [_factory_case(op, n, label) for op in ("rand", "randn") for n, label in ((16, "16"), (M1, "1M"), (M16, "16M"))]
    out += [_factory_case("rand", M1, "1M", "float64"), _factory_case("randn", M1, "1M", "float64")]
    out += [
        _in_place_case("bernoulli_(0.3) 1M float32", "bernoulli_", (0.3,), M1),
        _in_place_case("exponential_() 1M float32", "exponential_", (), M1),
        _in_place_case("random_(0, 1000) 1M int64", "random_", (0, 1000), M1, "int64"),
        Case("randint(0, 1000, 1M)",
             lambda libs: libs.kiln.randint(0, 1000, (M1,), generator=libs.kiln_gen),
             lambda libs: libs.torch.randint(0, 1000, (M1,), generator=libs.torch_gen),
             setup=_setup(), group="random"),
        Case("randperm(1M)",
             lambda libs: libs.kiln.randperm(M1, generator=libs.kiln_gen),
             lambda libs: libs.torch.randperm(M1, generator=libs.torch_gen),
             setup=_setup(), group="random"),
        Case("multinomial(64x1000 probs, 100 samples, no replacement)",
             lambda libs: libs.kiln.multinomial(libs.probs[0], 100, generator=libs.kiln_gen),
             lambda libs: libs.torch.multinomial(libs.probs[1], 100, generator=libs.torch_gen),
             setup=_setup(probs=lambda libs: (libs.kiln.ones(64, 1000), libs.torch.ones(64, 1000))),
             group="random"),
        Case("multinomial(64x1000 probs, 1000 samples, replacement)",
             lambda libs: libs.kiln.multinomial(libs.probs[0], 1000, True, generator=libs.kiln_gen),
             lambda libs: libs.torch.multinomial(libs.probs[1], 1000, True, generator=libs.torch_gen),
             setup=_setup(probs=lambda libs: (libs.kiln.ones(64, 1000), libs.torch.ones(64, 1000))),
             group="random"),
    ]
    return out
