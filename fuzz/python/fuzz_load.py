"""Fuzz target: kiln.load (weights_only=True, the default) on mutated checkpoints.

    python fuzz/python/fuzz_load.py [--seconds S] [--seed N] [--artifact DIR] CORPUS_DIR...

Replays every corpus file, then loads seeded mutations (fuzz/python/mutation.py) for S
seconds. Every input must load or raise RuntimeError or pickle.UnpicklingError naming
the problem (the contract of tests/python/interop/test_checkpoint_safety.py); any other
exception, or a crash, is a finding: the input is written to DIR/crash-load-<hash> (and,
before each load, to DIR/current-load-input, which survives a crash of the interpreter).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import pickle
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mutation import mutate_checkpoint  # noqa: E402
from replay_loop import replay_then_generate  # noqa: E402

import kiln  # noqa: E402


class Finding(Exception):
    """An outcome outside kiln.load's contract."""


def check_one(data: bytes) -> str:
    """Loads `data`; returns the outcome's name, raises Finding outside the contract."""
    try:
        kiln.load(io.BytesIO(data))
        return "loaded"
    except (RuntimeError, pickle.UnpicklingError) as e:
        message = str(e)
        if not ("kiln.load" in message or "corrupt" in message or "Bad CRC" in message):
            raise Finding(f"{type(e).__name__} without a checkpoint message: {message}") from e
        return type(e).__name__
    except Exception as e:  # noqa: BLE001 - everything else is the finding
        raise Finding(f"{type(e).__name__}: {e}\n{traceback.format_exc()}") from e


def load_corpus(paths: list[str]) -> list[bytes]:
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(q for q in p.iterdir() if q.is_file()) if p.is_dir() else [p])
    return [f.read_bytes() for f in files]


def fuzz(corpus: list[bytes], seconds: float, seed: int, artifacts: Path, runs: int | None = None) -> dict[str, int]:
    """Replays `corpus`, then loads mutations of it for `seconds` (or exactly `runs` of them).
    Returns the outcome counts; raises Finding."""
    artifacts.mkdir(parents=True, exist_ok=True)
    current = artifacts / "current-load-input"
    outcomes: dict[str, int] = {}

    def run(data: bytes) -> None:
        current.write_bytes(data)
        try:
            outcome = check_one(data)
        except Finding:
            crash = artifacts / f"crash-load-{hashlib.sha1(data).hexdigest()[:16]}"
            crash.write_bytes(data)
            print(f"fuzz_load: finding; input written to {crash}", file=sys.stderr)
            raise
        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    replay_then_generate(corpus, run, lambda rng: mutate_checkpoint(rng.choice(corpus), corpus, rng), seed, seconds, runs)
    current.unlink(missing_ok=True)
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="+")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--artifact", default=".")
    args = parser.parse_args()
    outcomes = fuzz(load_corpus(args.corpus), args.seconds, args.seed, Path(args.artifact))
    print(f"fuzz_load: {sum(outcomes.values())} inputs (seed {args.seed}), no finding: {outcomes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
