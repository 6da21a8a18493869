"""The CUDA backend of the kernel IR (codegen/cuda) without a GPU (DESIGN.md decisions 6 and 11).

- Every op of the pointwise math table (codegen/PointwiseMath.h), on every dtype the table covers
  (test_pointwise_math.py's cases), captured as kiln.compile captures it on CPU tensors and
  compiled for the CUDA target: the kernel IR printed as CUDA C.
- Fused kernels of captured graphs: pointwise chains, softmax, log_softmax, layer_norm and
  rms_norm forward and backward (joint captures), in float32, float16 and bfloat16: the CUDA
  graph fuses exactly as the CPU graph does.
- The eager CUDA pointwise kernels generated from the same table (eager/kernels/cuda/PointwiseMath.h,
  Note [Eager CUDA pointwise math from the compiler's table]).

All of them go through NVRTC to PTX and through ptxas for sm_80 and sm_90 (many kernels per
translation unit, NVRTC and ptxas runs in parallel). The CUDA graph's run-time
paths that need no GPU are in test_cuda_target.py."""

import os
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import kiln
from kiln import _C
from kiln.compiler._backends import _entries, _graph_programs

import test_pointwise_math as table_cases

ARCHS = ("sm_80", "sm_90")
CHUNK = 120  # kernels per NVRTC program


def _ptxas():
    return shutil.which("ptxas") or next(
        (p for p in ("/usr/local/cuda/bin/ptxas", "/usr/local/cuda-13.0/bin/ptxas") if os.path.exists(p)), None)


def _nvrtc_loads():
    try:
        _C._nvrtc_version()
        return True
    except RuntimeError:
        return False


pytestmark = [
    pytest.mark.skipif(not _nvrtc_loads(), reason="optional package nvidia-cuda-nvrtc is not installed"),
    pytest.mark.skipif(_ptxas() is None, reason="optional package cuda-toolkit is not installed (no ptxas)"),
]


LONG = os.environ.get("KILN_LONG_TESTS") == "1"


def _compile_one(name, source, entries, nvrtc_arch, folder):
    """NVRTC to PTX for `nvrtc_arch`, then ptxas for that arch (KILN_LONG_TESTS=1, at ptxas's default
    -O3, as the device run does) or, to keep CI in seconds, for every arch of ARCHS at -O0 from the one
    sm_80 PTX (PTX is forward compatible: sm_90 assembles it)."""
    ptx = _C._nvrtc_compile(source, f"{name}.cu", nvrtc_arch, True).decode()
    assert f".target {nvrtc_arch}" in ptx, ptx[:400]
    found = set(re.findall(r"\.entry\s+(\w+)\s*\(", ptx))
    missing = [e for e in entries if e not in found]
    if missing:
        return [f"{name}/{nvrtc_arch}: no PTX entry for {missing[:3]}"]
    path = os.path.join(folder, f"{name}_{nvrtc_arch}.ptx")
    with open(path, "w") as f:
        f.write(ptx)
    errors = []
    for arch in ([nvrtc_arch] if LONG else ARCHS):
        done = subprocess.run([_ptxas(), f"-arch={arch}", *([] if LONG else ["-O0"]), path, "-o",
                               f"{path}.{arch}.cubin"], capture_output=True, text=True, timeout=600)
        if done.returncode:
            errors.append(f"{name}/{arch}: {done.stderr[:2000]}")
    return errors


def compile_programs(programs):
    """programs: [(name, source, entries)], each through NVRTC to PTX and through ptxas for sm_80 and
    sm_90, two at a time; returns the number of entry points assembled (for each arch)."""
    jobs = [(name, source, entries, arch) for name, source, entries in programs for arch in (ARCHS if LONG else ARCHS[:1])]
    with tempfile.TemporaryDirectory() as folder, ThreadPoolExecutor(max_workers=2) as pool:
        errors = [e for errs in pool.map(lambda j: _compile_one(*j, folder), jobs) for e in errs]
    assert not errors, errors[:3]
    return sum(len(entries) for _, _, entries in programs)


def without_entry(source, entry):
    """`source` without the extern "C" line of `entry` (the template body it instantiates stays)."""
    return re.sub(rf"^extern \"C\" [^\n]*\b{entry}\([^\n]*\n", "", source, flags=re.M)


def batched(kernels, family):
    """kernels: {entry name of the first entry: (source, entries)} -> programs of CHUNK kernels each
    (the prelude is include-guarded, so whole sources concatenate)."""
    items = sorted(kernels.items())
    programs = []
    for start in range(0, len(items), CHUNK):
        part = items[start:start + CHUNK]
        programs.append((f"{family}_{start // CHUNK}", "\n".join(src for _, (src, _) in part),
                         [e for _, (_, entries) in part for e in entries]))
    return programs


def captured_graphs(fn, *args):
    """The graphs kiln.compile captures for fn(*args) (the forward and backward of a joint capture),
    with the number of ops each entry recorded; captured through the interpreter (no LLVM)."""
    compiled = kiln.compile(fn, backend="eager")
    compiled(*args)
    entries = _entries(compiled)
    return [p.graph for e in entries for p in _graph_programs(e.program)], entries


def cuda_graph(graph):
    return _C._runtime.compile(graph, runs_without_autograd=True, target="cuda")


# --- the pointwise math table ------------------------------------------------------------------------------------


def table_kernels():
    """{kernel entry: (source, entries)} for every table case and dtype, and the number of (case, dtype)
    pairs that made a kernel."""
    kernels, pairs = {}, 0
    for case, fn in table_cases.OPS.items():
        op = case.split(" ")[0]
        for dtype in table_cases.FLOAT_DTYPES + table_cases.INT_DTYPES:
            x, y = table_cases.operands(dtype)
            try:
                with kiln.no_grad():
                    fn(x, y)
            except (RuntimeError, TypeError, NotImplementedError):
                continue  # eager does not run the op on this dtype
            with kiln.no_grad():
                graphs, entries = captured_graphs(fn, x, y)
            (graph,) = graphs
            compiled = cuda_graph(graph)
            left_to_eager = ((op, dtype) in table_cases.LEFT_TO_EAGER
                             or (case, dtype) in table_cases.LEFT_TO_EAGER_CASES)
            expected = 0 if left_to_eager or entries[0].num_ops == 0 else 1
            assert compiled.targets_cuda and compiled.kernel_count == expected, (case, dtype)
            for source, entry32, entry64 in compiled.cuda_sources:
                # Each table kernel's 32-bit entry (KILN_LONG_TESTS=1: both); the 64-bit entry instantiates the
                # same printed body with another index type, compiled for every fused and eager kernel below.
                kernels[entry32] = (source, [entry32, entry64]) if LONG else (without_entry(source, entry64), [entry32])
                pairs += 1
    return kernels, pairs


def test_every_table_op_and_dtype_compiles_for_sm80_and_sm90():
    start = time.perf_counter()
    kernels, pairs = table_kernels()
    # 189 table cases over 9 dtypes, where eager runs them and the table covers them (test_pointwise_math.py).
    assert pairs >= 1200, pairs
    assert len(kernels) >= 900, len(kernels)  # distinct kernels (a few cases print the same kernel)
    entries = compile_programs(batched(kernels, "table"))
    assert entries == (2 if LONG else 1) * len(kernels)
    print(f"table: {pairs} (case, dtype) pairs, {len(kernels)} distinct kernels, {entries} entries x {len(ARCHS)} "
          f"archs in {time.perf_counter() - start:.1f}s")


# --- fused kernels of captured graphs -----------------------------------------------------------------------------

F = kiln.nn.functional


def _chain(x, y):
    return (kiln.sigmoid(x * 2 + y) - kiln.tanh(y)).relu() * 0.5


def _chain_broadcast(x, b):
    return kiln.exp(x - b) / (1 + x * x)


def _softmax(x):
    return F.softmax(x, dim=-1)


def _log_softmax(x):
    return F.log_softmax(x, dim=-1)


def _layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def _rms_norm(x, w):
    return F.rms_norm(x, (x.shape[-1],), w)


def _residual_layer_norm_gelu(x, r, w, b):
    return F.gelu(F.layer_norm(x + r, (x.shape[-1],), w, b))


def _loss(fn):
    def run(*args):
        y = fn(*args).float()
        return (y * y).sum()
    return run


def graph_cases(dtype):
    """(name, fn, args): forward graphs, and with requires_grad inputs forward and backward graphs."""
    def t(*shape, grad=False):
        return kiln.randn(*shape, dtype=kiln.float32).to(dtype).requires_grad_(grad)

    cases = [
        ("chain", _chain, (t(8, 33), t(8, 33))),
        ("chain_broadcast", _chain_broadcast, (t(4, 8, 17), t(17))),
        ("chain_strided", _chain, (t(33, 8).t(), t(8, 33))),
    ]
    for grad in (False, True):
        suffix = "_train" if grad else ""
        wrap = _loss if grad else (lambda f: f)
        cases += [
            ("softmax" + suffix, wrap(_softmax), (t(6, 50, grad=grad),)),
            ("log_softmax" + suffix, wrap(_log_softmax), (t(6, 50, grad=grad),)),
            ("layer_norm" + suffix, wrap(_layer_norm), (t(6, 48, grad=grad), t(48, grad=grad), t(48, grad=grad))),
            ("rms_norm" + suffix, wrap(_rms_norm), (t(6, 48, grad=grad), t(48, grad=grad))),
            ("residual_layer_norm_gelu" + suffix, wrap(_residual_layer_norm_gelu),
             (t(6, 48, grad=grad), t(6, 48), t(48, grad=grad), t(48, grad=grad))),
        ]
    return cases


def _unnamed(kernel_ir):
    return re.sub(r"^kernel \w+", "kernel", kernel_ir)


def fused_graph_kernels():
    kernels, graphs, counts = {}, 0, {}
    for dtype in (kiln.float32, kiln.float16, kiln.bfloat16):
        for name, fn, args in graph_cases(dtype):
            captured, _ = captured_graphs(fn, *args)
            for g in captured:
                graphs += 1
                cuda = cuda_graph(g)
                # (norms decomposed on the CPU too, as on CUDA: Note [Composites compile decomposed])
                cpu = _C._runtime.compile(g, runs_without_autograd=True, target="cpu", norms_whole=False)
                # The CUDA graph fuses as the CPU graph does: the same kernels, the same eager steps; but
                # layer_norm's weight and bias gradients, a CPU column kernel in eager's norm order
                # (Note [Norm parameter gradients as column groups]) that codegen/cuda does not print yet,
                # stay eager steps there.
                cpu_kernels = [_unnamed(k) for k in cpu.kernels if "norm order" not in k]
                assert [_unnamed(k) for k in cuda.kernels] == cpu_kernels, (name, dtype)
                cpu_norm_ops = [op for ops, k in zip(cpu.kernel_ops, cpu.kernels) if "norm order" in k for op in ops]
                assert sorted(cuda.eager_ops) == sorted(cpu.eager_ops + cpu_norm_ops), (name, dtype)
                counts[(name, dtype)] = counts.get((name, dtype), 0) + cuda.kernel_count
                for source, entry32, entry64 in cuda.cuda_sources:
                    kernels[entry32] = (source, [entry32, entry64])
    return kernels, graphs, counts


def test_fused_graph_kernels_compile_for_sm80_and_sm90():
    start = time.perf_counter()
    kernels, graphs, counts = fused_graph_kernels()
    for dtype in (kiln.float32, kiln.float16, kiln.bfloat16):
        # One fused kernel for a pointwise chain, one row kernel per normalization's forward, and at least
        # one more for its backward.
        assert counts[("chain", dtype)] == 1 and counts[("chain_broadcast", dtype)] == 1
        for name in ("softmax", "log_softmax", "layer_norm", "rms_norm", "residual_layer_norm_gelu"):
            assert counts[(name, dtype)] == 1, (name, dtype, counts[(name, dtype)])
            assert counts[(name + "_train", dtype)] >= 2, (name, dtype, counts[(name + "_train", dtype)])
    rows = sum("row kernel" in src for src, _ in kernels.values())
    assert rows >= 30, rows
    assert len(kernels) >= 60, len(kernels)
    entries = compile_programs(batched(kernels, "fused"))
    assert entries == 2 * len(kernels)
    print(f"fused: {graphs} graphs, {len(kernels)} distinct kernels ({rows} row kernels), {entries} entries x "
          f"{len(ARCHS)} archs in {time.perf_counter() - start:.1f}s")


# --- the eager CUDA pointwise kernels ----------------------------------------------------------------------------

# (op, dtype) of the eager CUDA table that the compiler's table does not cover: they keep the op's template
# (pow on the half types: eager's CPU pow differs there; arithmetic on bool: the table leaves it to eager).
EAGER_UNCOVERED = {"pow Half", "pow BFloat16", "add Bool", "mul Bool", "maximum Bool", "minimum Bool"}


def test_eager_pointwise_kernels_come_from_the_table_and_compile():
    kernels, uncovered = _C._cuda_codegen.eager_pointwise_kernels()
    assert set(uncovered) == EAGER_UNCOVERED
    assert len(kernels) >= 300, len(kernels)
    names = [name for _, name, _ in kernels]
    assert len(set(names)) == len(names)
    prelude = _C._cuda_codegen.eager_prelude()
    programs = []
    for start in range(0, len(kernels), CHUNK):
        part = kernels[start:start + CHUNK]
        programs.append((f"eager_{start // CHUNK}", prelude + "\n".join(body for _, _, body in part),
                         [name for _, name, _ in part]))
    assert compile_programs(programs) == len(kernels)
    what = {w for w, _, _ in kernels}
    assert {"add Half -> Half", "eq Long -> Bool", "gelu BFloat16 -> BFloat16", "exp Double -> Double",
            "gelu_backward Float -> Float", "sigmoid_backward Half -> Half", "tanh_backward BFloat16 -> BFloat16",
            "silu_backward Double -> Double", "threshold_backward Half -> Half",
            "threshold_backward Long -> Long", "mish_backward Float -> Float", "hardsigmoid_backward Half -> Half",
            "hardswish_backward BFloat16 -> BFloat16", "hardtanh_backward Float -> Float",
            "hardtanh_backward Half -> Half", "softplus_backward Double -> Double",
            "softplus_backward BFloat16 -> BFloat16"} <= what


def test_contiguous_kernels_load_and_store_128_bit_vectors():
    """Note [Vectorised pointwise kernels]: the PTX of a contiguous float32 (float64) kernel moves its
    operands with 4-element (2-element) vector loads and stores; a strided kernel does not."""
    for dtype, width in ((kiln.float32, "v4.f32"), (kiln.float64, "v2.f64")):
        x, y = kiln.randn(64).to(dtype), kiln.randn(64).to(dtype)
        compiled = kiln.compile(lambda a, b: a * b + a, backend="eager")
        with kiln.no_grad():
            compiled(x, y)
        (entry,) = _entries(compiled)
        (program,) = _graph_programs(entry.program)
        cuda = _C._runtime.compile(program.graph, runs_without_autograd=True, target="cuda")
        ((source, _, _),) = cuda.cuda_sources
        ptx = _C._nvrtc_compile(source, "vec.cu", "sm_80", True).decode()
        assert re.search(rf"ld\.global(\.nc)?\.{width}", ptx), ptx[:2000]
        assert re.search(rf"st\.global\.{width}", ptx), ptx[:2000]


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layer_norm"])
def test_row_kernels_load_and_store_128_bit_vectors(op):
    """Note [Vectorised row loops]: a row kernel's passes read the row (and per-column operands: layer_norm's
    weight) in 4-float (2-double) vectors and its element outputs are stored as vectors, when cols is a
    multiple of the vector and the operands are aligned (the scalar loop stays for the other cases)."""
    fns = {"softmax": lambda a, w: kiln.softmax(a, -1), "log_softmax": lambda a, w: kiln.log_softmax(a, -1),
           "layer_norm": lambda a, w: kiln.nn.functional.layer_norm(a, (64,), w)}
    for dtype, width in ((kiln.float32, "v4.f32"), (kiln.float64, "v2.f64")):
        x, w = kiln.randn(8, 64).to(dtype), kiln.randn(64).to(dtype)
        compiled = kiln.compile(fns[op], backend="eager")
        with kiln.no_grad():
            compiled(x, w)
        (entry,) = _entries(compiled)
        (program,) = _graph_programs(entry.program)
        cuda = _C._runtime.compile(program.graph, runs_without_autograd=True, target="cuda")
        rows = [source for source, _, _ in cuda.cuda_sources if "row kernel" in source]
        assert rows, [source[:200] for source, _, _ in cuda.cuda_sources]
        for source in rows:
            assert "vec_ok" in source
            ptx = _C._nvrtc_compile(source, "rows.cu", "sm_90", True).decode()
            assert re.search(rf"ld\.global(\.nc)?\.{width}", ptx), ptx[:2000]
            assert re.search(rf"st\.global\.{width}", ptx), ptx[:2000]
