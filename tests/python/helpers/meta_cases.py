"""Sample calls of every op of eager/ops/*.yaml, for the meta tests (tests/python/meta).

Each op's arguments are built from its schema: tensors of a few shapes (a matrix, a
square matrix, a batch of images with a matching conv weight, a vector), integer
tensors for index-like arguments, bool tensors for masks, and small numbers for
the rest (an argument's default where it has one). The first set of arguments the
CPU kernel accepts is the op's sample; the op then runs again with the same
arguments moved to the meta device, and the meta result must have the CPU result's
sizes, strides and dtype (`compare`). An op none of whose candidates the CPU accepts
has no sample (`run_op` says so); the test lists those too. Ops whose arguments the schema
does not determine have a hand-written sample (meta_samples.py), tried first.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import kiln
from meta_samples import SAMPLES
from opgen_text import load_opgen

YAML_DIR = Path(__file__).resolve().parents[3] / "eager" / "ops"


def load_yaml_ops():
    """Every entry of eager/ops/*.yaml as tools/opgen's Op objects."""
    load_opgen()
    model = sys.modules["model"]
    ops = []
    for path in sorted(YAML_DIR.glob("*.yaml")):
        ops.extend(model.load_ops(path.read_text(), str(path)))
    return ops


def has_meta_route(op) -> bool:
    """Whether the op reaches a meta implementation: its own Meta kernel (`meta: cpu_kernel` or
    `dispatch: Meta:`), or a CompositeImplicit kernel made of other ops."""
    return op.meta_kernel is not None or op.composite_kernel is not None


# --- argument candidates -------------------------------------------------------------

# (name, tensor shape, conv weight shape, 1-D index length): the layouts tried in order.
_LAYOUTS = (
    ("matrix", (3, 4), (2, 3, 3), 2),
    ("square", (4, 4), (2, 4, 3), 2),
    ("images", (2, 3, 6, 6), (4, 3, 3, 3), 2),
    ("sequence", (2, 3, 8), (4, 3, 3), 2),
    ("square_batch", (2, 4, 4), (4, 2, 3), 2),
    ("vector", (5,), (3,), 2),
    ("scalar", (), (), 1),
    ("int_matrix", (3, 4), (2, 3, 3), 2),  # integer tensors (bitwise ops, shifts)
)
_INDEX_NAMES = {"index", "indices", "target", "offsets", "repeats", "lengths", "input_lengths", "target_lengths"}
_MASK_NAMES = {"mask", "condition", "attn_mask"}
_INT_DEFAULTS = {"dim": 0, "dim0": 0, "dim1": 1, "start_dim": 0, "end_dim": -1, "k": 1, "n": 2, "m": 2,
                 "steps": 3, "groups": 1, "num_classes": 3, "chunks": 2, "sections": 2, "split_size": 2,
                 "diagonal": 0, "offset": 0, "repeats": 2, "length": 2, "start": 0, "end": 2, "step": 1,
                 "size": 2, "num_samples": 2, "high": 5, "low": 0, "bins": 4, "p": 2, "correction": 1,
                 "source": 0, "destination": 1, "dimension": 0, "upscale_factor": 1, "downscale_factor": 1,
                 "num_groups": 1, "padding_idx": -1, "blank": 0, "reduction": 1, "ignore_index": -100}
_INT_LIST_DEFAULTS = {"kernel_size": [2], "output_size": [2], "dims": [0], "dim": [0], "stride": [1],
                      "padding": [0], "dilation": [1], "pad": [1, 1], "repeats": [1, 2], "split_sizes": [1, 1],
                      "shifts": [1], "normalized_shape": None, "perm": None, "size": None, "shape": None}


@dataclass
class Sample:
    args: list
    kwargs: dict


def _float_tensor(shape, layout=None):
    if layout is not None and layout[0].startswith("int_"):
        return kiln.ones(shape, dtype=kiln.int64)
    return kiln.rand(shape) * 0.5 + 0.5


def _tensor_for(arg, layout, opname):
    _, shape, weight, index_len = layout
    name = arg.name
    if name in _MASK_NAMES:
        return kiln.rand(shape) > 0.5
    if name in _INDEX_NAMES or (name == "other" and opname in ("bitwise_and", "bitwise_or", "bitwise_xor")):
        if name in ("index", "indices") and opname in ("index_select", "index_add", "index_copy", "index_fill",
                                                    "index_put", "take", "embedding", "index_reduce"):
            return kiln.zeros(index_len, dtype=kiln.int64)
        if name in ("repeats", "offsets", "lengths", "input_lengths", "target_lengths"):
            return kiln.ones(index_len, dtype=kiln.int64)
        return kiln.zeros(shape, dtype=kiln.int64)
    if name == "weight" and len(shape) >= 3:
        return _float_tensor(weight, layout)
    if name in ("bias", "running_mean", "running_var") and shape:
        return _float_tensor((weight[0] if name == "bias" and len(shape) >= 3 else shape[1 if len(shape) > 1 else 0],),
                             layout)
    return _float_tensor(shape, layout)


def _scalar_for(arg):
    if arg.default is not None and arg.default not in ("None",):
        return None  # the default applies
    return 2 if arg.name in ("other", "exponent") else 1


def _value_for(arg, layout, opname):
    """The value for one argument, or `_DEFAULT` to leave its default in place."""
    t = arg.type
    name = arg.name
    if t.base == "Tensor":
        if t.is_list:
            if t.element_optional:
                return [kiln.zeros(layout[3], dtype=kiln.int64)]
            return [_tensor_for(arg, layout, opname), _tensor_for(arg, layout, opname)]
        if t.optional and name not in ("min", "max"):
            return _DEFAULT if arg.default is not None else None
        return _tensor_for(arg, layout, opname)
    if t.base == "Scalar" and name in ("min", "max"):  # clamp/clip need one bound
        return 0.75
    if arg.default is not None:
        return _DEFAULT
    if t.optional:
        return None
    if t.base in ("int", "SymInt"):
        if t.is_list:
            if name in ("size", "shape", "normalized_shape"):
                shape = layout[1]
                return list(shape[-1:]) if name == "normalized_shape" else list(shape)
            if name == "perm" or name == "dims" and opname == "permute":
                return list(reversed(range(len(layout[1]))))
            values = _INT_LIST_DEFAULTS.get(name) or [1]
            spatial = max(len(layout[1]) - 2, 1)
            if name in ("kernel_size", "output_size", "stride", "padding", "dilation"):
                return values * spatial
            return values
        return _INT_DEFAULTS.get(name, 1)
    if t.base == "float":
        return 0.5
    if t.base == "bool":
        return False
    if t.base == "Scalar":
        return _scalar_for(arg)
    if t.base == "ScalarType":
        return kiln.float32
    if t.base == "str":
        return "mean"
    return None


_DEFAULT = object()


def candidates(op):
    """Argument sets to try for `op`, as (layout name, Sample) pairs: its hand-written sample
    (meta_samples.py) first, where it has one."""
    schema = op.schema
    if op.full_name in SAMPLES:
        args, kwargs = SAMPLES[op.full_name]()
        yield "explicit", Sample(args, kwargs)
    for layout in _LAYOUTS:
        args, kwargs = [], {}
        ok = True
        for arg in schema.arguments:
            if arg.is_out:
                continue
            value = _value_for(arg, layout, schema.name)
            if value is _DEFAULT:
                continue
            if arg.kwarg_only:
                kwargs[arg.name] = value
            else:
                if kwargs:
                    ok = False
                    break
                args.append(value)
        if not ok:
            continue
        outs = schema.out_arguments
        if outs:
            for dtype in (kiln.float32, kiln.int64, kiln.bool):
                out_kwargs = dict(kwargs)
                for o in outs:
                    out_kwargs[o.name] = kiln.empty(0, dtype=dtype)
                yield layout[0], Sample(list(args), out_kwargs)
        else:
            yield layout[0], Sample(args, kwargs)


# --- running ---------------------------------------------------------------------------


def to_meta(value):
    if isinstance(value, kiln.Tensor):
        return value.to("meta")
    if isinstance(value, list):
        return [to_meta(v) for v in value]
    if isinstance(value, dict):
        return {k: to_meta(v) for k, v in value.items()}
    return value


def clone(value):
    if isinstance(value, kiln.Tensor):
        return value.clone()
    if isinstance(value, list):
        return [clone(v) for v in value]
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    return value


def call(op, sample: Sample):
    return kiln._C._call_op(f"kiln::{op.full_name}", tuple(clone(sample.args)), clone(sample.kwargs))


def tensors_of(value) -> list:
    if isinstance(value, kiln.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_of(v)]
    return []


def significant_strides(t) -> tuple:
    """The strides of the dims longer than 1 (a size-1 dim's stride never moves anything)."""
    return tuple(s for s, n in zip(t.stride(), t.shape) if n > 1)


def compare(cpu_result, meta_result) -> str | None:
    """None when the meta result matches the CPU one in structure, sizes, strides and dtype;
    else what differs."""
    cpu, meta = tensors_of(cpu_result), tensors_of(meta_result)
    if len(cpu) != len(meta):
        return f"{len(meta)} tensors on meta, {len(cpu)} on cpu"
    if not cpu and cpu_result is not None:
        return f"a {type(cpu_result).__name__} result, not a tensor"
    for i, (c, m) in enumerate(zip(cpu, meta)):
        if not m.is_meta:
            return f"output {i} is on {m.device}, not meta"
        if tuple(c.shape) != tuple(m.shape):
            return f"output {i}: size {tuple(m.shape)} on meta, {tuple(c.shape)} on cpu"
        if c.dtype != m.dtype:
            return f"output {i}: dtype {m.dtype} on meta, {c.dtype} on cpu"
        if c.numel() > 1 and significant_strides(c) != significant_strides(m):
            return f"output {i}: strides {m.stride()} on meta, {c.stride()} on cpu"
    return None


@dataclass
class Outcome:
    status: str          # "ok", "mismatch", "meta_error", "no_sample"
    detail: str = ""
    layout: str = ""


def run_op(op) -> Outcome:
    """Runs `op` on its first CPU-accepted sample, then on the same arguments on meta."""
    for layout, sample in candidates(op):
        try:
            kiln.manual_seed(0)
            cpu_result = call(op, sample)
        except Exception:  # noqa: BLE001 - the CPU refused this candidate: try the next
            continue
        meta_kwargs = to_meta(sample.kwargs)
        if op.schema.argument("device") is not None:  # factories: asked for device="meta"
            meta_kwargs["device"] = kiln.device("meta")
        try:
            meta_result = kiln._C._call_op(f"kiln::{op.full_name}", tuple(to_meta(sample.args)), meta_kwargs)
        except Exception as e:  # noqa: BLE001 - recorded as the op's meta error
            return Outcome("meta_error", f"{type(e).__name__}: {str(e).splitlines()[0][:200]}", layout)
        why = compare(cpu_result, meta_result)
        return Outcome("ok" if why is None else "mismatch", why or "", layout)
    return Outcome("no_sample")
