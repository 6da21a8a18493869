"""Argument values that bindings and Python-level ops mis-handle when they do, as JSON (so a case is
readable and replays), shared by the Python fuzz targets (fuzz_arg_parser.py, fuzz_python_functions.py).

``random_value`` draws one: ints at the int64 limits and beyond, NaN and infinities, bools where ints
go, None, strings, nested and mixed lists, tuples, dtypes, devices, memory formats, generators, and
tensors of every dtype, 0-dim, empty and non-contiguous. ``decode(value, lib)`` makes the Python
object from kiln or from torch (``lib``), so a call can be replayed on torch with equal arguments.

The process's address space is capped (``limit_address_space``) so that a size the checks let through
fails as an allocation error instead of swapping the machine; sizes drawn are tiny (<= 6), near the
int32 limit (2**31, at most 2 GiB, which the cap refuses) or far past any memory (2**62 and up).
"""

from __future__ import annotations

import math
import random
import resource

ADDRESS_SPACE_HEADROOM = 2 << 30  # what a call may map beyond what the process holds when capped

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]
INTS = [0, 1, 2, 3, -1, -2, 6, 2**31 - 1, 2**31, 2**62, 2**63 - 1, -(2**63), 2**63, 2**64]
NEAR_INT32_LIMIT = (2**31 - 1, 2**31)  # sizes of up to 8 GiB: left out where no address-space cap applies
FLOATS = [0.0, -0.0, 0.5, -1.5, 2.0, "nan", "inf", "-inf", 1e300]
STRINGS = ["", "mean", "sum", "none", "cpu", "cuda", "meta", "float32", "\x00", "é", "tanh", "reflect"]
SHAPES = [[], [0], [1], [3], [2, 3], [3, 1], [1, 4], [2, 0, 3], [2, 3, 4], [1, 2, 3, 2]]
LAYOUTS = ["contiguous", "contiguous", "strided", "transposed", "expanded"]


def decode(value, lib):
    """The Python object a JSON value stands for, made with `lib` (the kiln or the torch module)."""
    if isinstance(value, list):
        return [decode(v, lib) for v in value]
    if not isinstance(value, dict):
        return value
    (kind, spec), = value.items()
    if kind == "float":
        return float(spec)
    if kind == "tuple":
        return tuple(decode(v, lib) for v in spec)
    if kind in ("dtype", "memory_format"):
        return getattr(lib, spec)
    if kind == "device":
        return lib.device(spec)
    if kind == "generator":
        return lib.Generator().manual_seed(spec)
    if kind == "tensor":
        dtype, shape, layout = spec[:3]
        tensor = make_tensor(lib, dtype, shape, layout)
        return tensor.requires_grad_() if len(spec) > 3 and spec[3] and tensor.is_floating_point() else tensor
    if kind == "callable":
        return CALLABLES[spec]
    if kind == "module":
        return lib.nn.Linear(3, 2) if spec == "linear" else lib.nn.Sequential()
    raise ValueError(f"unknown value kind {kind!r}")


CALLABLES = {"identity": lambda *args, **kwargs: args[0] if args else None}


def make_tensor(lib, dtype: str, shape: list[int], layout: str):
    numel = math.prod(shape)
    base = lib.arange(numel * (2 if layout == "strided" else 1), dtype=lib.float64)
    base = (base - numel / 2) / 3
    if layout == "strided":
        t = base[::2].reshape(shape) if numel else base.reshape(shape)
    elif layout == "transposed" and len(shape) >= 2:
        t = base.reshape(shape[:-2] + [shape[-1], shape[-2]]).transpose(-1, -2)
    elif layout == "expanded" and shape and shape[0] > 1:
        t = base.reshape(shape)[:1].expand(shape)
    else:
        t = base.reshape(shape)
    return t.to(getattr(lib, dtype))


def random_tensor(rng: random.Random, layouts=LAYOUTS) -> dict:
    return {"tensor": [rng.choice(DTYPES), rng.choice(SHAPES), rng.choice(layouts)]}


def random_value(rng: random.Random, depth: int = 0):
    """A JSON value for one argument."""
    kind = rng.randrange(14 if depth < 2 else 10)
    if kind <= 2:
        return random_tensor(rng)
    if kind == 3:
        return rng.choice(INTS)
    if kind == 4:
        f = rng.choice(FLOATS)
        return {"float": f} if isinstance(f, str) else f
    if kind == 5:
        return rng.choice([True, False, None])
    if kind == 6:
        return rng.choice(STRINGS)
    if kind == 7:
        return {"dtype": rng.choice(DTYPES)}
    if kind == 8:
        return rng.choice([{"device": "cpu"}, {"device": "meta"}, {"memory_format": "channels_last"},
                           {"memory_format": "contiguous_format"}, {"generator": rng.randrange(100)}])
    if kind == 9:
        return [rng.choice(INTS[:7]) for _ in range(rng.randrange(5))]
    if kind == 10:
        return {"tuple": [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]}
    return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def sanitizer_loaded() -> bool:
    """ASan's runtime (preloaded by scripts/sanitize.sh) reserves terabytes of shadow address
    space up front, so an address-space cap would fail every later mapping."""
    with open("/proc/self/maps") as maps:
        return any("libasan" in line or "libtsan" in line for line in maps)


def _mapped_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def limit_address_space() -> None:
    """Caps the address space at what the process maps now (kiln, and torch if imported) plus
    ADDRESS_SPACE_HEADROOM; under a sanitizer, which a cap would break, leaves out the sizes near
    the int32 limit instead (they would allocate and fill gigabytes)."""
    if sanitizer_loaded():
        INTS[:] = [i for i in INTS if i not in NEAR_INT32_LIMIT]
        return
    cap = _mapped_bytes() + ADDRESS_SPACE_HEADROOM
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft > cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
