"""Runs one OpInfo's samples through torch and kiln and lists where the two disagree.

Cases, per OpInfo that resolves to a kiln op (opinfo_resolve.kiln_callable):
- forward in float32, float64, one integer dtype (int64 where supported) and bool, each
  where the OpInfo supports it: same outputs (count, shapes, dtypes, values within the
  OpInfo's own tolerance overrides, torch.testing's defaults elsewhere), or where torch
  raises, kiln raising the same exception type. An op whose torch result changes with
  the seed (random ops, uninitialised memory) is compared on shapes and dtypes only.
- gradients in float64 of every differentiable output, through the OpInfo's
  gradcheck_wrapper and the sample's output_process_fn_grad, against the same seeded
  upstream gradients;
- error inputs: kiln raises the error type torch's OpInfo expects, with a message the
  OpInfo's regex matches ("kiln" read as "torch");
- with reference=True, the OpInfo's reference inputs as further forward cases.

A case's kind names what it compares ("forward float32", "gradient float64", "error
input", "error message", "reference float64"); a disagreement is (kind, sample index,
message). The known-differences table (tests/python/opinfo) is keyed by op and kind.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import torch

import kiln
from opinfo_convert import NUMPY_DTYPES, NotConvertible, flat_values, kiln_tensor, to_kiln, to_torch
from opinfo_resolve import is_missing_attribute, read_torch_as_kiln, torch_value_is_random, values_uncomparable

INTEGER_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
# Test classes whose tolerance overrides are about other backends or tracers, not eager values.
_OTHER_BACKEND_TESTS = re.compile(r"Inductor|Decomp|Jit|Dynamo|Meta|Proxy|Fake|MPS|Nvfuser|Cuda", re.I)


@dataclass
class OpReport:
    """What one OpInfo's run found: cases compared, disagreements, kinds that were not comparable."""
    key: str
    cases: int = 0
    disagreements: list = field(default_factory=list)  # [kind, sample index, message]
    random: bool = False
    missing: bool = False  # a case reached a kiln op or module that does not exist

    def disagree(self, kind: str, index: int, message: str) -> None:
        self.disagreements.append([kind, index, message.strip().splitlines()[0][:300] if message.strip() else ""])


def forward_dtypes(opinfo) -> list:
    """float32, float64, one integer dtype and bool, where the OpInfo supports each on CPU."""
    supported = opinfo.supported_dtypes("cpu")
    chosen = [dtype for dtype in (torch.float32, torch.float64) if dtype in supported]
    chosen += [dtype for dtype in INTEGER_DTYPES if dtype in supported][:1]
    chosen += [torch.bool] if torch.bool in supported else []
    return chosen


def tolerance(opinfo, dtype) -> tuple:
    """(atol, rtol) from the OpInfo's toleranceOverride/precisionOverride decorators for CPU
    eager tests (the largest of them), else (None, None): torch.testing's defaults."""
    atol = rtol = None
    for info in opinfo.decorators:
        if not hasattr(info, "decorators"):
            continue
        if info.device_type not in (None, "cpu") or (info.dtypes is not None and dtype not in info.dtypes):
            continue
        if info.cls_name and _OTHER_BACKEND_TESTS.search(info.cls_name):
            continue
        for decorator in info.decorators:
            overrides = getattr(decorator, "d", None)
            if not isinstance(overrides, dict) or dtype not in overrides:
                continue
            value = overrides[dtype]
            if hasattr(value, "atol"):
                atol, rtol = max(atol or 0.0, value.atol), max(rtol or 0.0, value.rtol)
            else:  # precisionOverride: a precision read as atol
                atol = max(atol or 0.0, float(value))
                rtol = rtol if rtol is not None else {torch.float32: 1.3e-6, torch.float64: 1e-7}.get(dtype, 0.0)
    return atol, rtol


def _outcome(fn):
    try:
        return fn(), None
    except Exception as error:  # noqa: BLE001 - the exception is the outcome under test
        return None, error


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def compare_results(k, t, atol, rtol, *, values: bool = True) -> str | None:
    """Why kiln's result k differs from torch's t, or None where they agree."""
    kiln_leaves, torch_leaves = flat_values(k), flat_values(t)
    if len(kiln_leaves) != len(torch_leaves):
        return f"kiln returned {len(kiln_leaves)} values, torch {len(torch_leaves)}"
    for index, (kv, tv) in enumerate(zip(kiln_leaves, torch_leaves)):
        where = f"output {index}: " if len(torch_leaves) > 1 else ""
        if isinstance(tv, torch.Tensor):
            if not isinstance(kv, kiln.Tensor):
                return f"{where}kiln returned {type(kv).__name__}, torch a tensor"
            if tuple(kv.shape) != tuple(tv.shape):
                return f"{where}shape {tuple(kv.shape)} != torch {tuple(tv.shape)}"
            if str(kv.dtype).removeprefix("kiln.") != str(tv.dtype).removeprefix("torch."):
                return f"{where}dtype {kv.dtype} != torch {tv.dtype}"
            if not values or tv.dtype not in NUMPY_DTYPES:
                continue
            try:
                torch.testing.assert_close(to_torch(kv), tv.detach().resolve_conj().resolve_neg(), atol=atol, rtol=rtol,
                                           equal_nan=True, check_stride=False)
            except AssertionError as error:
                lines = [line.strip() for line in str(error).splitlines() if line.strip()]
                return where + "; ".join(lines[:4])
        elif isinstance(tv, (bool, int, float, complex)) and not isinstance(tv, torch.Size):
            if isinstance(kv, kiln.Tensor) or not isinstance(kv, (bool, int, float, complex)):
                return f"{where}kiln returned {type(kv).__name__}, torch {type(tv).__name__}"
            if values and not (kv == tv or (isinstance(tv, float) and math.isnan(tv) and math.isnan(kv))
                               or math.isclose(kv, tv, rel_tol=rtol or 1e-6, abs_tol=atol or 1e-6)):
                return f"{where}{kv!r} != torch {tv!r}"
        elif isinstance(tv, torch.dtype):
            if str(kv).removeprefix("kiln.") != str(tv).removeprefix("torch."):
                return f"{where}{kv} != torch {tv}"
        elif isinstance(tv, torch.Size):
            if tuple(kv) != tuple(tv):
                return f"{where}{tuple(kv)} != torch {tuple(tv)}"
        elif tv is None and kv is not None:
            return f"{where}kiln returned {type(kv).__name__}, torch None"
    return None


def _compared(k, t, atol, rtol, *, values: bool = True) -> str | None:
    try:
        return compare_results(k, t, atol, rtol, values=values)
    except Exception as error:  # noqa: BLE001 - a result the comparison cannot read is a disagreement
        return f"kiln's result could not be compared: {_error_text(error)}"


def _chosen(samples: list, limit: int | None) -> list:
    """Up to ``limit`` samples spread evenly over the list (first and last included), with their indices."""
    indexed = list(enumerate(samples))
    if limit is None or len(indexed) <= limit:
        return indexed
    if limit == 1:
        return indexed[:1]
    step = (len(indexed) - 1) / (limit - 1)
    return [indexed[round(i * step)] for i in range(limit)]


def _call(fn, args):
    sample_input, sample_args, sample_kwargs = args
    return fn(sample_input, *sample_args, **sample_kwargs)


def forward_cases(report: OpReport, opinfo, kiln_fn, kind: str, samples: list, dtype) -> None:
    atol, rtol = tolerance(opinfo, dtype)
    for index, sample in samples:
        try:  # two copies, made before torch's call can change the sample in place
            kiln_args = to_kiln((sample.input, sample.args, sample.kwargs))
            kiln_args_again = to_kiln((sample.input, sample.args, sample.kwargs))
        except (NotConvertible, ValueError, TypeError):
            continue
        torch_args = (sample.input, sample.args, sample.kwargs)
        torch.manual_seed(0)
        t, torch_error = _outcome(lambda: _call(opinfo.op, torch_args))
        kiln.manual_seed(0)
        k, kiln_error = _outcome(lambda: _call(kiln_fn, kiln_args))
        report.cases += 1
        if kiln_error is not None and is_missing_attribute(kiln_error):
            report.missing = True
            continue
        if torch_error is not None:
            if kiln_error is None:
                report.disagree(kind, index, f"kiln returned; torch raised {_error_text(torch_error)}")
            elif not isinstance(kiln_error, type(torch_error)):
                report.disagree(kind, index, f"kiln raised {_error_text(kiln_error)}; torch raised "
                                             f"{_error_text(torch_error)}")
            continue
        if kiln_error is not None:
            report.disagree(kind, index, f"kiln raised {_error_text(kiln_error)}")
            continue
        random = report.random or values_uncomparable(opinfo)
        if not random:  # an op drawing random numbers: kiln's result changes with kiln's seed
            kiln.manual_seed(1)
            again, _ = _outcome(lambda: _call(kiln_fn, kiln_args_again))
            random = torch_value_is_random(to_torch_values(k), to_torch_values(again))
        report.random |= random
        why = _compared(k, t, atol, rtol, values=not random)
        if why is not None:
            report.disagree(kind, index, why)


def to_torch_values(value):
    """kiln's result with its tensors as torch tensors (for comparing two kiln runs)."""
    if isinstance(value, kiln.Tensor):
        try:
            return to_torch(value)
        except Exception:  # noqa: BLE001 - a dtype numpy lacks: compare as equal
            return None
    if isinstance(value, (list, tuple)):
        return [to_torch_values(item) for item in value]
    return None


def _differentiable(value) -> bool:
    return isinstance(value, torch.Tensor) and value.requires_grad and (value.is_floating_point() or value.is_complex())


def gradient_cases(report: OpReport, opinfo, kiln_fn, samples: list) -> None:
    kind = "gradient float64"
    atol, rtol = tolerance(opinfo, torch.float64)
    kiln_wrapper = read_torch_as_kiln(opinfo.gradcheck_wrapper)
    for index, sample in samples:
        tensors = {}
        try:
            kiln_args = to_kiln((sample.input, sample.args, sample.kwargs), tensors)
        except (NotConvertible, ValueError, TypeError):
            continue
        pairs = [(t, k) for t, k in tensors.values() if t.requires_grad]
        if not pairs:
            continue
        torch_out, torch_error = _outcome(
            lambda: sample.output_process_fn_grad(opinfo.gradcheck_wrapper(opinfo.op, sample.input, *sample.args,
                                                                          **sample.kwargs)))
        if torch_error is not None:
            continue
        outputs = [(i, out) for i, out in enumerate(flat_values(torch_out)) if _differentiable(out)]
        if not outputs:
            continue
        generator = torch.Generator().manual_seed(0)
        upstream = [torch.randn(out.shape, dtype=out.dtype, generator=generator) for _, out in outputs]
        torch_grads, torch_error = _outcome(lambda: torch.autograd.grad(
            [out for _, out in outputs], [t for t, _ in pairs], upstream, allow_unused=True))
        if torch_error is not None:
            continue
        report.cases += 1
        process = read_torch_as_kiln(sample.output_process_fn_grad)
        kiln_out, kiln_error = _outcome(lambda: process(kiln_wrapper(kiln_fn, kiln_args[0], *kiln_args[1],
                                                                     **kiln_args[2])))
        if kiln_error is not None:
            if is_missing_attribute(kiln_error):
                report.missing = True
            else:
                report.disagree(kind, index, f"kiln forward raised {_error_text(kiln_error)}")
            continue
        kiln_leaves = flat_values(kiln_out)
        kiln_outputs = [kiln_leaves[i] if i < len(kiln_leaves) else None for i, _ in outputs]
        lost = [i for (i, _), out in zip(outputs, kiln_outputs)
                if not isinstance(out, kiln.Tensor) or not out.requires_grad]
        if lost:
            report.disagree(kind, index, f"kiln outputs {lost} do not require grad")
            continue
        kiln_grads, kiln_error = _outcome(lambda: kiln.autograd.grad(
            kiln_outputs, [k for _, k in pairs], [kiln_tensor(u) for u in upstream], allow_unused=True))
        if kiln_error is not None:
            report.disagree(kind, index, f"kiln backward raised {_error_text(kiln_error)}")
            continue
        for position, (tg, kg) in enumerate(zip(torch_grads, kiln_grads)):
            tg = torch.zeros_like(pairs[position][0]) if tg is None else tg
            if kg is None:
                kg = kiln.zeros(list(pairs[position][1].shape), dtype=pairs[position][1].dtype)
            why = _compared(kg, tg, atol, rtol)
            if why is not None:
                report.disagree(kind, index, f"grad of input {position}: {why}")
                break


def error_cases(report: OpReport, opinfo, kiln_fn) -> None:
    if opinfo.error_inputs_func is None:
        return
    torch.manual_seed(0)
    for index, error_input in enumerate(opinfo.error_inputs("cpu")):
        sample = error_input.sample_input
        try:
            kiln_args = to_kiln((sample.input, sample.args, sample.kwargs))
        except (NotConvertible, ValueError, TypeError):
            continue
        _, torch_error = _outcome(lambda: _call(opinfo.op, (sample.input, sample.args, sample.kwargs)))
        if torch_error is None:
            continue
        report.cases += 1
        _, kiln_error = _outcome(lambda: _call(kiln_fn, kiln_args))
        if kiln_error is None:
            report.disagree("error input", index, f"kiln returned; torch raised {_error_text(torch_error)}")
        elif not isinstance(kiln_error, (error_input.error_type, type(torch_error))):
            report.disagree("error input", index,
                            f"kiln raised {_error_text(kiln_error)}; torch raised {_error_text(torch_error)}")
        elif (str(kiln_error).replace("kiln", "torch") != str(torch_error)
              and not re.search(error_input.error_regex, str(kiln_error).replace("kiln", "torch"))):
            report.disagree("error message", index, f"kiln: {kiln_error}; torch: {torch_error}")


def run_opinfo(opinfo, key: str, kiln_fn, *, samples_per_dtype: int | None, reference: bool) -> OpReport:
    """Every case of one OpInfo (see the module docstring)."""
    report = OpReport(key)
    for dtype in forward_dtypes(opinfo):
        name = str(dtype).removeprefix("torch.")
        torch.manual_seed(0)
        samples = list(opinfo.sample_inputs("cpu", dtype))
        forward_cases(report, opinfo, kiln_fn, f"forward {name}", _chosen(samples, samples_per_dtype), dtype)
        if reference and opinfo.reference_inputs_func is not None:
            torch.manual_seed(0)
            references = list(opinfo.reference_inputs("cpu", dtype))
            forward_cases(report, opinfo, kiln_fn, f"reference {name}", _chosen(references, None), dtype)
    if opinfo.supports_autograd and torch.float64 in opinfo.supported_backward_dtypes("cpu") and not report.random:
        torch.manual_seed(0)
        samples = list(opinfo.sample_inputs("cpu", torch.float64, requires_grad=True))
        gradient_cases(report, opinfo, kiln_fn, _chosen(samples, samples_per_dtype))
    error_cases(report, opinfo, kiln_fn)
    return report
