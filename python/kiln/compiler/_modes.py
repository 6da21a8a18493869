"""kiln.compile's ``mode``: which names it takes and the runtime options each gives
(``kiln._C._runtime.compile``'s keywords)."""

from __future__ import annotations

# torch.compile's modes; on the CPU "max-autotune-no-cudagraphs" is "max-autotune".
MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def check_mode(mode) -> None:
    """Raises RuntimeError (torch's wording) for a mode kiln.compile does not know."""
    if mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           + ", ".join(m for m in MODES if m is not None))


def runtime_options(mode) -> dict:
    """The compile options of ``mode``: "reduce-overhead" pre-plans the kernels' intermediates in an arena
    (runtime/MemoryPlan.h); "max-autotune" times a few schedules per kernel at compile time and keeps the
    fastest (runtime/KernelAutotune.h, Note [Choosing a kernel's schedule])."""
    return dict(reduce_overhead=mode == "reduce-overhead",
                max_autotune=mode in ("max-autotune", "max-autotune-no-cudagraphs"))
