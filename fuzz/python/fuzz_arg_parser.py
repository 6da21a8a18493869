"""Fuzz target: the generated op bindings' argument parsing (PythonArgParser) and what the
ops do with the values it lets through.

    python fuzz/python/fuzz_arg_parser.py [--seconds S] [--seed N] [--artifact DIR] CORPUS_DIR...

A case is one call: an op of ``kiln._C._functions`` or a method of a Tensor, with positional
and keyword arguments drawn from values that bindings mis-handle when they do (ints at the
int64 limits and beyond, NaN and infinities, bools where ints go, None, strings, nested and
mixed lists, tuples of tensors, dtypes, devices, memory formats, generators, tensors of every
dtype, 0-dim, empty and non-contiguous; hostile_values.py). Cases are JSON, so a
corpus file and a finding are readable and replayable. Replays every corpus file, then
seeded fresh and mutated cases for S seconds.

The contract: a call returns, or raises TypeError, RuntimeError (and its subclasses),
ValueError, IndexError, NotImplementedError, OverflowError or MemoryError with a message.
SystemError (a binding returned NULL without an exception, or a value with one set), any
other exception type, a call running longer than CALL_SECONDS (a hang; the watchdog dumps
the stack and exits) or a crash is a finding: the case is written to
DIR/crash-arg_parser-<hash>.json (and, before each call, to DIR/current-arg_parser-input.json,
which survives a crash of the interpreter).

The process's address space is capped (hostile_values.limit_address_space; not under ASan) so that a
size the checks let through fails as an allocation error instead of swapping the machine.
"""

from __future__ import annotations

import argparse
import faulthandler
import hashlib
import json
import random
import sys
import time
import traceback
from pathlib import Path

import kiln
import kiln._C._functions as _functions
from hostile_values import DTYPES, SHAPES, decode, limit_address_space, random_value

ALLOWED = (TypeError, RuntimeError, ValueError, IndexError, NotImplementedError, OverflowError, MemoryError)
CALL_SECONDS = 20  # a call still running after this hangs: the process dumps its stack and exits

# Ops that change process-wide state a later case would then see.
EXCLUDED_OPS = frozenset({"set_num_threads", "set_num_interop_threads", "manual_seed", "seed"})


def _function_names() -> list[str]:
    return sorted(n for n in dir(_functions) if not n.startswith("__") and n not in EXCLUDED_OPS
                  and callable(getattr(_functions, n)))


def _method_names() -> list[str]:
    return sorted(n for n in dir(kiln.Tensor) if not n.startswith("_") and n not in EXCLUDED_OPS
                  and callable(getattr(kiln.Tensor, n, None)) and n not in ("numpy", "tolist", "backward",
                                                                       "register_hook", "share_memory_"))


FUNCTIONS = _function_names()
METHODS = _method_names()


KEYWORDS = ["dim", "keepdim", "dtype", "out", "alpha", "value", "other", "input", "size", "generator",
            "memory_format", "device", "reduction", "weight", "bias", "p", "training", "correction",
            "unbiased", "index", "src", "approximate", "not_a_keyword"]


def random_case(rng: random.Random) -> dict:
    method = rng.random() < 0.3
    op = rng.choice(METHODS if method else FUNCTIONS)
    case = {"op": op, "method": method, "args": [random_value(rng) for _ in range(rng.randrange(5))],
            "kwargs": {}}
    for _ in range(rng.choice([0, 0, 1, 2])):
        case["kwargs"][rng.choice(KEYWORDS)] = random_value(rng)
    if method:
        case["self"] = random_value(rng) if rng.random() < 0.1 else {"tensor": [
            rng.choice(DTYPES), rng.choice(SHAPES), "contiguous"]}
    return case


def mutate_case(case: dict, rng: random.Random) -> dict:
    """`case` with one to three things changed: an argument replaced, inserted or removed, a
    keyword added or dropped, or the op swapped for another."""
    out = json.loads(json.dumps(case))
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(6)
        args = out["args"]
        if kind == 0 and args:
            args[rng.randrange(len(args))] = random_value(rng)
        elif kind == 1:
            args.insert(rng.randint(0, len(args)), random_value(rng))
        elif kind == 2 and args:
            del args[rng.randrange(len(args))]
        elif kind == 3:
            out["kwargs"][rng.choice(KEYWORDS)] = random_value(rng)
        elif kind == 4 and out["kwargs"]:
            del out["kwargs"][rng.choice(sorted(out["kwargs"]))]
        else:
            out["op"] = rng.choice(METHODS if out["method"] else FUNCTIONS)
    return out


# --- one call -------------------------------------------------------------------------------------

class Finding(Exception):
    """An outcome outside the bindings' contract."""


def check_one(case: dict) -> str:
    """Makes the call `case` describes; returns the outcome's name, raises Finding outside the
    contract. A case naming an op this build lacks is 'skipped' (corpus files outlive ops)."""
    try:
        if case["method"]:
            target = getattr(decode(case["self"], kiln), case["op"], None)
        else:
            target = getattr(_functions, case["op"], None)
        if target is None:
            return "skipped"
        args = [decode(a, kiln) for a in case["args"]]
        kwargs = {k: decode(v, kiln) for k, v in case["kwargs"].items()}
    except Exception as e:  # noqa: BLE001 - building the inputs must not fail
        raise Finding(f"building the inputs of {case!r} failed: {type(e).__name__}: {e}") from e
    try:
        target(*args, **kwargs)
        return "returned"
    except ALLOWED as e:
        if not str(e):
            raise Finding(f"{type(e).__name__} without a message from {case['op']}") from e
        return type(e).__name__
    except Exception as e:  # noqa: BLE001 - everything else is the finding
        raise Finding(f"{type(e).__name__} from {case['op']}: {e}\n{traceback.format_exc()}") from e


def load_corpus(paths: list[str]) -> list[dict]:
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(q for q in p.iterdir() if q.is_file()) if p.is_dir() else [p])
    return [json.loads(f.read_text()) for f in files]


def fuzz(corpus: list[dict], seconds: float, seed: int, artifacts: Path, runs: int | None = None) -> dict[str, int]:
    """Replays `corpus`, then calls fresh and mutated cases for `seconds` (or exactly `runs` of
    them). Returns the outcome counts; raises Finding."""
    artifacts.mkdir(parents=True, exist_ok=True)
    current = artifacts / "current-arg_parser-input.json"
    outcomes: dict[str, int] = {}

    def run(case: dict) -> None:
        text = json.dumps(case, sort_keys=True)
        current.write_text(text)
        faulthandler.dump_traceback_later(CALL_SECONDS, exit=True)
        try:
            outcome = check_one(case)
        except Finding:
            crash = artifacts / f"crash-arg_parser-{hashlib.sha1(text.encode()).hexdigest()[:16]}.json"
            crash.write_text(text)
            print(f"fuzz_arg_parser: finding; case written to {crash}", file=sys.stderr)
            raise
        finally:
            faulthandler.cancel_dump_traceback_later()
        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    for case in corpus:
        run(case)
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    done = 0
    while (done < runs) if runs is not None else (time.monotonic() < deadline):
        if corpus and rng.random() < 0.3:
            run(mutate_case(rng.choice(corpus), rng))
        else:
            run(random_case(rng))
        done += 1
    current.unlink(missing_ok=True)
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="+")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--artifact", default=".")
    args = parser.parse_args()
    limit_address_space()
    kiln.set_num_threads(1)
    outcomes = fuzz(load_corpus(args.corpus), args.seconds, args.seed, Path(args.artifact), args.runs)
    print(f"fuzz_arg_parser: {sum(outcomes.values())} inputs (seed {args.seed}), no finding: {outcomes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
