"""The loop every Python fuzz target runs: replay the corpus, then seeded new inputs for a time
budget or an exact count. Each target supplies how to run one input and how to make the next."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

Input = TypeVar("Input")


def replay_then_generate(corpus: Sequence[Input], run: Callable[[Input], None],
                         next_input: Callable[[random.Random], Input], seed: int, seconds: float,
                         runs: int | None = None) -> None:
    """Runs every corpus entry, then `next_input(rng)` from a Random(seed) until `seconds` have passed
    (or exactly `runs` inputs when given, so a seeded run reproduces whatever the machine's speed)."""
    for case in corpus:
        run(case)
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    done = 0
    while (done < runs) if runs is not None else (time.monotonic() < deadline):
        run(next_input(rng))
        done += 1
