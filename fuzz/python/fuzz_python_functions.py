"""Fuzz target: kiln's public functions written in Python (``kiln.*``, ``kiln.nn.functional.*``,
``kiln.linalg.*``, ``kiln.fft.*``, ...: python/kiln, not the generated bindings, which
fuzz_arg_parser.py covers), each called with arguments drawn from its signature and then made hostile
(hostile_values.py), and, where kiln raises, the same call made on torch as the oracle.

    python fuzz/python/fuzz_python_functions.py [--seconds S | --runs N] [--seed N] [--artifact DIR]
        [--no-oracle] [--survey] CORPUS_DIR...

A case is JSON: {"function": "kiln.nn.functional.pad", "args": [...], "kwargs": {...}}.

The contract, per call (``verdict``):
- a call returns, or raises TypeError, RuntimeError (and subclasses), ValueError, IndexError,
  NotImplementedError, OverflowError or MemoryError with a message;
- any other exception type (AttributeError, KeyError, ZeroDivisionError, UnboundLocalError,
  AssertionError, SystemError, ...) is a finding ("internal") unless torch raises the same type;
- an IndexError with CPython's own words ("list index out of range") where torch raises no
  IndexError is a finding ("internal"): kiln's code indexed past a list it did not check;
- where torch's argument parser refuses the call (a TypeError in its words, PARSER_REFUSAL) and kiln
  raises another type, save NotImplementedError (kiln lacks the function or the feature), it is a
  finding ("mismatch");
- a crash, or a call running longer than CALL_SECONDS (the watchdog dumps the stack and exits).
Where torch returns and kiln raises, or the other way round, nothing is said: kiln may lack the
feature, or accept more.

A finding is written to DIR/crash-python_functions-<hash>.json (and each case, before its call, to
DIR/current-python_functions-input.json, which survives a crash). --survey runs on past findings and
prints them grouped by function and category at the end, instead of stopping at the first.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import hashlib
import importlib
import inspect
import io
import json
import random
import re
import sys
import time
import traceback
import types
from pathlib import Path

import kiln
from hostile_values import (INTS, decode, limit_address_space, random_tensor, random_value,
                            sanitizer_loaded)

ALLOWED = (TypeError, RuntimeError, ValueError, IndexError, NotImplementedError, OverflowError, MemoryError)
CALL_SECONDS = 20
# torch's argument parser's refusals (and Python's own, for a torch function written in Python): the
# verdicts kiln's type must match. Other torch errors say more about torch's internals than about the call.
PARSER_REFUSAL = re.compile(r"\(\): argument '|received an invalid combination of arguments|expected Tensor as "
                            r"element|takes \d+ positional argument|unexpected keyword argument|missing \d+ required")
CPYTHON_INDEX_ERRORS = ("list index out of range", "tuple index out of range", "pop from empty list",
                        "string index out of range", "list assignment index out of range")

NAMESPACES = ("kiln", "kiln.nn.functional", "kiln.linalg", "kiln.fft", "kiln.special", "kiln.signal.windows",
              "kiln.masked", "kiln.func", "kiln.autograd", "kiln.sparse", "kiln.nn.init", "kiln.nn.utils")
# Functions that change process-wide state a later case would then see, read or write files, start
# threads or processes, or wait.
EXCLUDED = frozenset({
    "kiln.set_default_dtype", "kiln.set_default_device", "kiln.set_default_tensor_type", "kiln.set_printoptions",
    "kiln.set_num_threads", "kiln.set_num_interop_threads", "kiln.manual_seed", "kiln.seed", "kiln.set_rng_state",
    "kiln.use_deterministic_algorithms", "kiln.set_deterministic_debug_mode", "kiln.set_float32_matmul_precision",
    "kiln.set_warn_always", "kiln.set_grad_enabled", "kiln.set_anomaly_enabled", "kiln.save", "kiln.load",
    "kiln.compile", "kiln.set_autocast_enabled", "kiln.set_autocast_dtype", "kiln.set_autocast_cpu_enabled",
    "kiln.set_autocast_cpu_dtype", "kiln.set_autocast_gpu_dtype", "kiln.set_flush_denormal",
    "kiln.autograd.set_grad_enabled", "kiln.autograd.set_detect_anomaly", "kiln.autograd.set_multithreading_enabled",
    "kiln.set_vital", "kiln.export", "kiln.from_file", "kiln.sparse.check_sparse_tensor_invariants",
    "kiln.nn.utils.stateless",
    # Helpers that modules export but torch has not: not API (kiln.nn.functional's __all__ is its namespace).
    "kiln.nn.functional.scalar_type_name", "kiln.nn.functional.involves_complex",
    "kiln.nn.functional.detached_amax", "kiln.nn.functional.native", "kiln.nn.functional.reduce_mean",
    "kiln.nn.functional.reduce_sum", "kiln.special.install", "kiln.func.wraps", "kiln.sparse.sparse_not_implemented",
    "kiln.autograd.once_differentiable",
})
# Functions that refuse some hostile calls with another exception type than torch's parser's TypeError (found by
# --survey runs, left to fix; issue 30): their mismatches are counted as 'known-mismatch', not findings. Internal
# errors from them still are. A function fixed comes off the list.
KNOWN_MISMATCHES = frozenset({
    "kiln.as_tensor", "kiln.asarray", "kiln.bartlett_window", "kiln.blackman_window", "kiln.conv_transpose1d",
    "kiln.conv_transpose2d", "kiln.cumulative_trapezoid", "kiln.dsplit", "kiln.frombuffer", "kiln.histogramdd",
    "kiln.hsplit", "kiln.kaiser_window", "kiln.linalg.cond", "kiln.linalg.eigh", "kiln.linalg.inv_ex",
    "kiln.linalg.matrix_norm", "kiln.linalg.norm", "kiln.meshgrid", "kiln.nanmedian",
    "kiln.nn.functional.adaptive_max_pool1d", "kiln.nn.functional.adaptive_max_pool1d_with_indices",
    "kiln.nn.functional.adaptive_max_pool2d_with_indices", "kiln.nn.functional.adaptive_max_pool3d_with_indices",
    "kiln.nn.functional.cosine_embedding_loss", "kiln.nn.functional.group_norm", "kiln.nn.functional.grouped_mm",
    "kiln.nn.functional.kl_div", "kiln.nn.functional.local_response_norm", "kiln.nn.functional.lp_pool1d",
    "kiln.nn.functional.lp_pool2d", "kiln.nn.functional.max_pool3d", "kiln.nn.functional.max_pool3d_with_indices",
    "kiln.nn.functional.max_unpool3d", "kiln.nn.functional.pad", "kiln.nn.functional.poisson_nll_loss",
    "kiln.nn.functional.rrelu", "kiln.poisson", "kiln.special.i0", "kiln.svd_lowrank", "kiln.triangular_solve",
    "kiln.unfold_copy", "kiln.unique", "kiln.unsqueeze_copy", "kiln.vsplit"
})
# Exception types outside the contract that a function raises on purpose, as torch's does.
TORCH_PARITY = {"kiln.lobpcg": AssertionError}  # torch's lobpcg asserts A square and A, B of one shape
TENSOR_NAMES = frozenset({"input", "self", "other", "tensor", "x", "x1", "x2", "weight", "bias", "A", "B", "b",
                          "target", "index", "src", "source", "mat", "mat1", "mat2", "vec", "LU", "pivots",
                          "y", "end", "values", "indices", "tensors", "q", "k", "v", "query", "key", "value",
                          "log_probs", "targets", "input1", "input2", "anchor", "positive", "negative", "grid",
                          "theta", "running_mean", "running_var", "boundaries", "sorted_sequence", "elements",
                          "test_elements", "condition", "mask", "t", "a", "w", "data"})
INT_NAMES = frozenset({"dim", "n", "k", "diagonal", "groups", "offset", "dim0", "dim1", "dim2", "num_classes",
                       "kernel_size", "stride", "padding", "dilation", "output_size", "size", "window_length",
                       "steps", "upscale_factor", "downscale_factor", "chunks", "sections", "M", "N", "ord",
                       "bins", "r", "num_groups", "step", "repeats", "axis", "max_norm", "norm_type", "p"})


def public_functions() -> dict[str, types.FunctionType]:
    """Qualified name -> function, for every public function written in Python (a plain Python
    function object whose module is kiln's); the first namespace that exports one names it."""
    found: dict[types.FunctionType, str] = {}
    for namespace in NAMESPACES:
        module = importlib.import_module(namespace)
        names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
        for name in sorted(names):
            f = getattr(module, name, None)
            qualified = f"{namespace}.{name}"
            if (isinstance(f, types.FunctionType) and (f.__module__ or "").startswith("kiln")
                    and qualified not in EXCLUDED and f not in found):
                found[f] = qualified
    return {name: f for f, name in found.items()}


FUNCTIONS = public_functions()
NAMES = sorted(FUNCTIONS)


# --- cases ----------------------------------------------------------------------------------------

def _plausible_value(rng: random.Random, name: str):
    """A value for parameter `name` of the kind its name suggests, most of the time."""
    if name in TENSOR_NAMES and rng.random() < 0.8:
        return random_tensor(rng, ["contiguous"] * 3 + ["transposed", "strided"])
    if name in INT_NAMES and rng.random() < 0.7:
        return rng.choice(INTS[:7])
    if name in ("tensors", "inputs") and rng.random() < 0.7:
        return [random_tensor(rng, ["contiguous"]) for _ in range(rng.randint(1, 3))]
    if name in ("fn", "func", "function", "callback"):
        return {"callable": "identity"}
    if name in ("module", "model", "parameters") and rng.random() < 0.7:
        return {"module": rng.choice(["linear", "sequential"])}
    return random_value(rng)


def _signature(function):
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):
        return None


def random_case(rng: random.Random) -> dict:
    """A call of a random function: its required parameters given plausible values, a few optional
    ones too, then one to two of the values made hostile."""
    name = rng.choice(NAMES)
    case = {"function": name, "args": [], "kwargs": {}}
    sig = _signature(FUNCTIONS[name])
    if sig is None:
        case["args"] = [random_value(rng) for _ in range(rng.randrange(4))]
        return case
    optional = []
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            case["args"] += [_plausible_value(rng, "tensor") for _ in range(rng.randrange(3))]
        elif p.kind == p.VAR_KEYWORD:
            continue
        elif p.default is p.empty:
            if p.kind == p.KEYWORD_ONLY:
                case["kwargs"][p.name] = _plausible_value(rng, p.name)
            else:
                case["args"].append(_plausible_value(rng, p.name))
        else:
            optional.append(p.name)
    for p in rng.sample(optional, min(len(optional), rng.choice([0, 0, 1, 2]))):
        case["kwargs"][p] = _plausible_value(rng, p)
    return mutate_case(case, rng, rng.randint(0, 2))


def mutate_case(case: dict, rng: random.Random, changes: int | None = None) -> dict:
    """`case` with `changes` (one to three) things changed: an argument replaced, inserted or
    removed, a keyword's value replaced or the keyword dropped, or the function swapped."""
    out = json.loads(json.dumps(case))
    for _ in range(rng.randint(1, 3) if changes is None else changes):
        kind = rng.randrange(7)
        args, kwargs = out["args"], out["kwargs"]
        if kind <= 1 and args:
            args[rng.randrange(len(args))] = random_value(rng)
        elif kind == 2 and kwargs:
            kwargs[rng.choice(sorted(kwargs))] = random_value(rng)
        elif kind == 3:
            args.insert(rng.randint(0, len(args)), random_value(rng))
        elif kind == 4 and args:
            del args[rng.randrange(len(args))]
        elif kind == 5 and kwargs:
            del kwargs[rng.choice(sorted(kwargs))]
        elif kind == 6 and case.get("function") in FUNCTIONS and rng.random() < 0.3:
            out["function"] = rng.choice(NAMES)
    return out


# --- one call -------------------------------------------------------------------------------------

class Finding(Exception):
    """An outcome outside the contract; `category` is 'internal', 'mismatch' or 'inputs'."""

    def __init__(self, category: str, message: str):
        super().__init__(message)
        self.category = category


def _resolve(lib, qualified: str):
    target = lib
    for part in qualified.split(".")[1:]:
        target = getattr(target, part, None)
        if target is None:
            return None
    return target


def _outcome(lib, case: dict):
    """The exception `case` raises on `lib`, or None when it returns (decoding errors are re-raised
    as Finding: building the inputs must not fail)."""
    target = _resolve(lib, case["function"])
    try:
        args = [decode(a, lib) for a in case["args"]]
        kwargs = {k: decode(v, lib) for k, v in case["kwargs"].items()}
    except Exception as e:  # noqa: BLE001
        raise Finding("inputs", f"building the inputs failed: {type(e).__name__}: {e}") from e
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # show_config and friends print
            target(*args, **kwargs)
        return None
    except Exception as e:  # noqa: BLE001 - the verdict is judged below
        return e


class Oracle:
    """torch, imported only when the oracle is on (not under a sanitizer's preloaded runtime)."""

    def __init__(self, enabled: bool):
        self.torch = None
        if enabled:
            import torch
            torch.set_num_threads(1)
            self.torch = torch

    def outcome(self, case: dict):
        """torch's exception for `case`, None when it returns, or 'absent' where torch has no such
        function."""
        if self.torch is None:
            return "absent"
        if _resolve(self.torch, case["function"].replace("kiln", "torch", 1)) is None:
            return "absent"
        torch_case = dict(case, function=case["function"].replace("kiln", "torch", 1))
        try:
            return _outcome(self.torch, torch_case)
        except Finding:
            return "absent"


def check_one(case: dict, oracle: Oracle) -> str:
    """Makes the call `case` describes; returns the outcome's name, raises Finding outside the
    contract. A case naming a function this build lacks is 'skipped' (corpus files outlive code)."""
    if _resolve(kiln, case["function"]) is None or case["function"] in EXCLUDED:
        return "skipped"
    error = _outcome(kiln, case)
    if error is None:
        return "returned"
    expected = "absent"
    internal = not isinstance(error, ALLOWED) or (
        isinstance(error, IndexError) and str(error) in CPYTHON_INDEX_ERRORS)
    if internal or isinstance(error, TypeError) or oracle.torch is not None:
        expected = oracle.outcome(case)
    where = f"{case['function']}: {type(error).__name__}: {error}"
    if internal:
        if (isinstance(expected, BaseException) and type(expected) is type(error)) or (
                TORCH_PARITY.get(case["function"]) is type(error) and str(error)):
            return type(error).__name__
        trace = "".join(traceback.format_exception(error)[-6:])
        raise Finding("internal", f"{where}\n{trace}")
    if not str(error):
        raise Finding("internal", f"{where} (no message)")
    if isinstance(expected, BaseException) and not isinstance(expected, ALLOWED):
        expected = None  # torch's own Python code failing: no verdict
    if (isinstance(expected, TypeError) and PARSER_REFUSAL.search(str(expected))
            and not isinstance(error, (TypeError, NotImplementedError))):
        if case["function"] in KNOWN_MISMATCHES:
            return "known-mismatch"
        trace = "".join(traceback.format_exception(error)[-4:])
        raise Finding("mismatch", f"{where}; torch raises {type(expected).__name__}: {str(expected)[:300]}\n{trace}")
    return type(error).__name__


def load_corpus(paths: list[str]) -> list[dict]:
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(q for q in p.iterdir() if q.is_file()) if p.is_dir() else [p])
    return [json.loads(f.read_text()) for f in files]


def fuzz(corpus: list[dict], seconds: float, seed: int, artifacts: Path, runs: int | None = None,
         oracle: Oracle | None = None, survey: bool = False) -> tuple[dict[str, int], dict]:
    """Replays `corpus`, then calls fresh and mutated cases for `seconds` (or exactly `runs` of them).
    Returns the outcome counts and, with `survey`, the findings grouped by (function, category,
    first line) with one case each; without it raises the first Finding."""
    artifacts.mkdir(parents=True, exist_ok=True)
    current = artifacts / "current-python_functions-input.json"
    oracle = oracle or Oracle(False)
    outcomes: dict[str, int] = {}
    findings: dict[tuple, tuple[dict, str]] = {}

    def run(case: dict) -> None:
        text = json.dumps(case, sort_keys=True)
        current.write_text(text)
        faulthandler.dump_traceback_later(CALL_SECONDS, exit=True)
        try:
            outcome = check_one(case, oracle)
        except Finding as finding:
            outcome = f"finding:{finding.category}"
            crash = artifacts / f"crash-python_functions-{hashlib.sha1(text.encode()).hexdigest()[:16]}.json"
            if not survey:
                crash.write_text(text)
                print(f"fuzz_python_functions: finding; case written to {crash}\n{finding}", file=sys.stderr)
                raise
            first = str(finding).splitlines()[0]
            key = (case["function"], finding.category, first.split(":", 2)[1] if ":" in first else first)
            if key not in findings:
                findings[key] = (case, str(finding))
                print(f"== {finding.category} {case['function']}: {key[2]}\n{text}\n{finding}\n", flush=True)
        finally:
            faulthandler.cancel_dump_traceback_later()
        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    for case in corpus:
        run(case)
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    done = 0
    while (done < runs) if runs is not None else (time.monotonic() < deadline):
        if corpus and rng.random() < 0.2:
            run(mutate_case(rng.choice(corpus), rng))
        else:
            run(random_case(rng))
        done += 1
    current.unlink(missing_ok=True)
    return outcomes, findings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="+")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--artifact", default=".")
    parser.add_argument("--no-oracle", action="store_true", help="never import torch")
    parser.add_argument("--survey", action="store_true", help="group the findings instead of stopping")
    args = parser.parse_args()
    oracle = Oracle(not args.no_oracle and not sanitizer_loaded())
    limit_address_space()
    kiln.set_num_threads(1)
    import warnings
    warnings.simplefilter("ignore")
    outcomes, findings = fuzz(load_corpus(args.corpus), args.seconds, args.seed, Path(args.artifact), args.runs,
                              oracle, args.survey)
    for function, category, first in sorted(findings):
        print(f"{category} {function}: {first}")
    state = f"{len(findings)} findings" if findings else "no finding"
    print(f"fuzz_python_functions: {sum(outcomes.values())} inputs over {len(FUNCTIONS)} functions "
          f"(seed {args.seed}), {state}: {outcomes}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
