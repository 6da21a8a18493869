"""mode="max-autotune" (runtime/KernelAutotune.h, Note [Choosing a kernel's schedule]): every schedule a
kernel may be given (codegen/KernelSchedule.h: vector width, unroll, parallel grain) computes exactly what
the default schedule does, on pointwise (contiguous, broadcast, strided, float16/float64/int) and row
kernels with vector tails; the schedule is part of the kernel cache's key; kiln.compile's max-autotune
mode gives the default mode's results bit for bit and times each kernel once per process; a later process
takes the choices from the disk cache untimed (Note [Autotune choices on disk], codegen/llvm/KernelCache.h)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import kiln
from kiln import _C
from kiln.compiler._backends import compiled_graphs

RNG = np.random.default_rng(2024)

# (name, IR text, input shapes and dtypes as numpy arrays)
GRAPHS = {
    "transcendental chain": ("""graph(%x : f32[1037]{1}):
  %a : f32[1037]{1} = kiln::mul.Scalar(%x, other=2)
  %b : f32[1037]{1} = kiln::sin(%a)
  %c : f32[1037]{1} = kiln::exp(%b)
  %d : f32[1037]{1} = kiln::tanh(%c)
  %e : f32[1037]{1} = kiln::addcmul(%d, %x, %b, value=0.5)
  return (%e, %b)
""", lambda: [RNG.standard_normal(1037).astype(np.float32)]),
    "float64 with a scalar input": ("""graph(%x : f64[203]{1}, %s : f64[]{}):
  %a : f64[203]{1} = kiln::mul.Tensor(%x, %s)
  %b : f64[203]{1} = kiln::log1p(%a)
  %c : f64[203]{1} = kiln::sqrt(%b)
  return (%c)
""", lambda: [np.abs(RNG.standard_normal(203)), np.array(1.5)]),
    "float16 through float32": ("""graph(%x : f16[77]{1}):
  %a : f32[77]{1} = kiln::_to_copy(%x, dtype=float32, device=None, non_blocking=False, memory_format=None)
  %b : f32[77]{1} = kiln::sigmoid(%a)
  %c : f16[77]{1} = kiln::_to_copy(%b, dtype=float16, device=None, non_blocking=False, memory_format=None)
  return (%c)
""", lambda: [RNG.standard_normal(77).astype(np.float16)]),
    "integer arithmetic": ("""graph(%x : i32[45]{1}, %y : i32[45]{1}):
  %a : i32[45]{1} = kiln::mul.Scalar(%x, other=3)
  %b : i32[45]{1} = kiln::bitwise_xor.Tensor(%x, %y)
  %m : i32[45]{1} = kiln::maximum(%a, %b)
  %c : i32[45]{1} = kiln::mul.Tensor(%m, %y)
  return (%c)
""", lambda: [RNG.integers(-50, 50, 45).astype(np.int32), RNG.integers(1, 7, 45).astype(np.int32)]),
    "broadcast bias add": ("""graph(%x : f32[37, 19]{19, 1}, %b : f32[19]{1}):
  %y : f32[37, 19]{19, 1} = kiln::add.Tensor(%x, %b, alpha=1)
  %z : f32[37, 19]{19, 1} = kiln::gelu(%y, approximate="tanh")
  return (%z)
""", lambda: [RNG.standard_normal((37, 19)).astype(np.float32), RNG.standard_normal(19).astype(np.float32)]),
    "per-row value": ("""graph(%x : f32[29, 13]{13, 1}, %r : f32[29, 1]{1, 1}):
  %y : f32[29, 13]{13, 1} = kiln::mul.Tensor(%x, %r)
  return (%y)
""", lambda: [RNG.standard_normal((29, 13)).astype(np.float32), RNG.standard_normal((29, 1)).astype(np.float32)]),
    "layer_norm rows": ("""graph(%x : f32[33, 70]{70, 1}, %w : f32[70]{1}):
  %m : f32[33, 1]{1, 1} = kiln::mean.dim(%x, dim=[1], keepdim=True, dtype=None)
  %c : f32[33, 70]{70, 1} = kiln::sub.Tensor(%x, %m, alpha=1)
  %s : f32[33, 70]{70, 1} = kiln::mul.Tensor(%c, %c)
  %v : f32[33, 1]{1, 1} = kiln::mean.dim(%s, dim=[1], keepdim=True, dtype=None)
  %e : f32[33, 1]{1, 1} = kiln::add.Scalar(%v, other=1e-05, alpha=1)
  %r : f32[33, 1]{1, 1} = kiln::rsqrt(%e)
  %n : f32[33, 70]{70, 1} = kiln::mul.Tensor(%c, %r)
  %y : f32[33, 70]{70, 1} = kiln::mul.Tensor(%n, %w)
  return (%y)
""", lambda: [RNG.standard_normal((33, 70)).astype(np.float32), RNG.standard_normal(70).astype(np.float32)]),
}


def _tensors(arrays):
    return [kiln.from_numpy(np.ascontiguousarray(a)) for a in arrays]


def _transposed_graph():
    """A strided (gathering) kernel: the input is a transposed view."""
    text = """graph(%x : f32[23, 11]{1, 23}, %y : f32[23, 11]{11, 1}):
  %a : f32[23, 11]{11, 1} = kiln::mul.Tensor(%x, %y)
  %b : f32[23, 11]{11, 1} = kiln::cos(%a)
  return (%b)
"""
    x = kiln.from_numpy(RNG.standard_normal((11, 23)).astype(np.float32)).t()
    y = kiln.from_numpy(RNG.standard_normal((23, 11)).astype(np.float32))
    return text, [x, y]


def _schedules(every):
    """Every (lanes, unroll, grain) max-autotune may choose (`every`; else the widest, most unrolled code at each
    grain: a strided kernel's LLVM compile is slow), plus small grains that split these small graphs."""
    candidates = set(_C._runtime.autotune_candidates(10**7))
    lanes = sorted({c[0] for c in candidates})
    if not every:
        candidates = {c for c in candidates if c[0] == lanes[-1] and c[1] == 4}
    return sorted(candidates | {(lanes[-1], 4, 64), (lanes[-1], 4, 1)} | ({(lanes[0], 2, 16)} if every else set()))

# Graphs checked under every candidate schedule; the others under the widest, most unrolled code only.
EVERY_SCHEDULE = {"transcendental chain", "float16 through float32", "broadcast bias add", "layer_norm rows"}


def _bits(values):
    return [(v.dtype, tuple(v.shape), v.contiguous().view(-1).numpy().tobytes()) for v in values]


@pytest.mark.parametrize("name", [*GRAPHS, "transposed input"])
def test_every_schedule_computes_what_the_default_does(name):
    if name == "transposed input":
        text, inputs = _transposed_graph()
    else:
        text, make = GRAPHS[name]
        inputs = _tensors(make())
    graph = _C._ir.parse(text)
    default = _C._runtime.compile(graph)
    assert default.kernel_count >= 1 and default.eager_ops == []
    assert set(default.kernel_schedules) == {"default"}
    want = _bits(default.run(inputs))
    for schedule in _schedules(name in EVERY_SCHEDULE):
        compiled = _C._runtime.compile(graph, schedule=schedule)
        assert _bits(compiled.run(inputs)) == want, schedule


def test_the_schedule_is_part_of_the_kernel_cache_key():
    text, make = GRAPHS["transcendental chain"]
    graph = _C._ir.parse(text)
    wide = max(c[0] for c in _C._runtime.autotune_candidates(1))
    _C._runtime.compile(graph)
    before = _C._runtime.compiled_kernel_count()
    _C._runtime.compile(graph)  # the default again: a hit
    assert _C._runtime.compiled_kernel_count() == before
    unrolled = _C._runtime.compile(graph, schedule=(wide, 3, 0))  # other code: its own entry
    assert _C._runtime.compiled_kernel_count() == before + 1
    assert unrolled.kernel_schedules == [f"lanes={wide} unroll=3"]
    _C._runtime.compile(graph, schedule=(wide, 3, 4096))  # the grain is the runtime's: the same code
    assert _C._runtime.compiled_kernel_count() == before + 1


def test_a_schedule_the_host_cannot_take_is_refused():
    graph = _C._ir.parse(GRAPHS["transcendental chain"][0])
    with pytest.raises(RuntimeError, match="multiple of the host"):
        _C._runtime.compile(graph, schedule=(3, 1, 0))


def _chain(x):
    return ((x * 2 + 1).sin().exp().tanh() - 0.5).relu()


def _norm_rows(x, w):
    m = x.mean(dim=-1, keepdim=True)
    c = x - m
    return c * (c * c).mean(dim=-1, keepdim=True).add(1e-5).rsqrt() * w


def _bias_gelu(x, b):
    return kiln.nn.functional.gelu(x + b)


@pytest.mark.parametrize("fn,shapes", [(_chain, [(300000,)]), (_norm_rows, [(512, 96), (96,)]),
                                       (_bias_gelu, [(64, 130), (130,)])], ids=["chain", "norm rows", "bias gelu"])
def test_max_autotune_mode_gives_the_default_modes_results(fn, shapes):
    inputs = [kiln.from_numpy(RNG.standard_normal(s).astype(np.float32)) for s in shapes]
    default = kiln.compile(fn)
    tuned = kiln.compile(fn, mode="max-autotune")
    with kiln.no_grad():
        want = _bits([default(*inputs)])
        timed_before = _C._runtime.autotuned_kernel_count()
        got = _bits([tuned(*inputs)])
        timed = _C._runtime.autotuned_kernel_count() - timed_before
        assert _bits([tuned(*inputs)]) == want == got
        (graph,) = compiled_graphs(tuned)
        assert len(graph.kernel_schedules) == graph.kernel_count >= 1
        assert timed <= graph.kernel_count  # each kernel timed at most once (none when an earlier test chose)
        again = kiln.compile(fn, mode="max-autotune")
        assert _bits([again(*inputs)]) == want
        assert _C._runtime.autotuned_kernel_count() - timed_before == timed  # the choices were remembered
    (default_graph,) = compiled_graphs(default)
    assert set(default_graph.kernel_schedules) == {"default"}


def test_unknown_mode_is_refused():
    with pytest.raises(RuntimeError, match="Unrecognized mode=max_autotune"):
        kiln.compile(_chain, mode="max_autotune")


# A fresh process compiling a chain and a row kernel in max-autotune mode: prints the kernels it timed and
# the choices it took from the disk cache, then its results' bytes.
_CHOICE_WORKER = """
import hashlib
import numpy as np
import kiln
from kiln import _C
kiln.set_num_threads(1)
x = kiln.from_numpy(np.linspace(-2, 2, 300000, dtype=np.float32))
r = kiln.from_numpy(np.linspace(-2, 2, 512 * 96, dtype=np.float32).reshape(512, 96))
chain = kiln.compile(lambda x: ((x * 2 + 1).sin().exp().tanh() - 0.5).relu(), mode="max-autotune")
rows = kiln.compile(lambda x: kiln.nn.functional.softmax(x, -1), mode="max-autotune")
with kiln.no_grad():
    out = chain(x).numpy().tobytes() + rows(r).numpy().tobytes()
print(_C._runtime.autotuned_kernel_count(), _C._runtime.autotune_choices_from_disk(), hashlib.sha1(out).hexdigest())
"""


def test_a_second_process_takes_the_choices_from_the_disk_cache(tmp_path):
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path))

    def run():
        out = subprocess.run([sys.executable, "-c", _CHOICE_WORKER], env=env, capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr
        timed, from_disk, digest = out.stdout.split()
        return int(timed), int(from_disk), digest

    first = run()
    assert first[0] == 2 and first[1] == 0  # both kernels timed, nothing on disk yet
    assert len(list((tmp_path / "autotune").glob("*.choice"))) == 2
    second = run()
    assert second[0] == 0 and second[1] == 2  # both choices read back, nothing timed
    assert second[2] == first[2]
    # a corrupt choice is discarded and its kernel timed again
    for entry in (tmp_path / "autotune").glob("*.choice"):
        data = bytearray(entry.read_bytes())
        data[-1] ^= 0xFF
        entry.write_bytes(bytes(data))
    third = run()
    assert third[0] == 2 and third[1] == 0 and third[2] == first[2]
