"""The printed CUDA C runs, without a GPU: codegen/cuda's kernels compiled as host C++ (g++, with a
shim for CUDA's built-ins and KILN_KCG_HOST: one thread per block, so a block reduction is its one
thread's sum) and called with CPU tensors' memory, against eager. This checks what the printer says
(Note [CUDA C from the kernel IR]): loads, stores, casts, constants, float16/bfloat16 rounding, the
NaN and integer rules, strides and broadcasts, row kernels' passes. The libm of the host stands in for
libdevice, so transcendental results are compared with a tolerance, the rest bit for bit. What it
cannot check (the warp shuffles, 32-bit index entries on real grids) scripts/gpu_check.sh does."""

import ctypes
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import kiln
from kiln import _C
from cuda_host_shim import ONE_THREAD_SHIM
from kiln.compiler._backends import _entries, _graph_programs

import test_pointwise_math as table_cases

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="optional package gcc is not installed (no g++)")

SHIM = ONE_THREAD_SHIM

# libdevice calls, which the host's libm stands in for (Note [CUDA C from the kernel IR]).
TRANSCENDENTAL = re.compile(r"\b(exp|expm1|exp2|log|log2|log10|log1p|sin|cos|tan|tanh|erf|erfc|asin|acos|atan|sinh|"
                            r"cosh|asinh|acosh|atanh|pow|atan2|hypot)f?\(")


def _host_library(kernels, folder, tag):
    """kernels: [(source, entry)] -> a shared library with call_<entry>(const uint64_t* words) for each."""
    body = [SHIM]
    for source, entry in kernels:
        body.append(source)
        base = entry[: -len("_i64")]
        body.append(f'extern "C" void call_{entry}(const void* w) {{ {entry}(*static_cast<const {base}_args*>(w)); }}')
    path = os.path.join(folder, f"{tag}.cpp")
    with open(path, "w") as f:
        f.write("\n".join(body))
    lib = path[:-4] + ".so"
    done = subprocess.run(["g++", "-std=c++17", "-O1", "-ffp-contract=off", "-fno-fast-math", "-fPIC", "-shared",
                           "-w", path, "-o", lib], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[:3000]
    return ctypes.CDLL(lib)


def _words(*values):
    return (ctypes.c_uint64 * len(values))(*[v & (2**64 - 1) for v in values])


def _same(got, want, approximate, what):
    table_cases.check_same(got, want, approximate, what)


def _capture(fn, *args):
    compiled = kiln.compile(fn, backend="eager")
    with kiln.no_grad():
        compiled(*args)
    (entry,) = _entries(compiled)
    (program,) = _graph_programs(entry.program)
    return _C._runtime.compile(program.graph, runs_without_autograd=True, target="cuda")


def test_every_table_op_runs_as_eager_does():
    """Each table case on float32, float64, float16, bfloat16 and int32 (test_pointwise_math.py's
    operands: the special values, every pair), one contiguous kernel each."""
    runs = []
    for case, fn in table_cases.OPS.items():
        for dtype in (kiln.float32, kiln.float64, kiln.float16, kiln.bfloat16, kiln.int32):
            x, y = table_cases.operands(dtype)
            if case in table_cases.UNDEFINED_CASTS and dtype.is_floating_point:
                x, y = x.clamp(-100, 100).nan_to_num(), y.clamp(-100, 100).nan_to_num()
            try:
                with kiln.no_grad():
                    want = fn(x, y)
            except (RuntimeError, TypeError, NotImplementedError):
                continue
            compiled = _capture(fn, x, y)
            if compiled.kernel_count != 1 or compiled.eager_ops:
                continue  # left to eager (test_pointwise_math.py's LEFT_TO_EAGER)
            ((source, _, entry64),) = compiled.cuda_sources
            (inputs,) = compiled.kernel_graph_inputs
            assert "contiguous" in source, case
            if not all(0 <= i < 2 for i in inputs):
                continue  # reads a tensor the function made (masked_fill.Tensor's value): not x or y
            runs.append((case, dtype, (x, y), want, source, entry64, inputs))
    assert len(runs) >= 700, len(runs)
    print(f"host emulation: {len(runs)} (case, dtype) runs")
    with tempfile.TemporaryDirectory() as folder:
        unique = {entry: source for _, _, _, _, source, entry, _ in runs}
        lib = _host_library([(s, e) for e, s in unique.items()], folder, "table")
        for case, dtype, args, want, source, entry, inputs in runs:
            got = kiln.empty(want.shape, dtype=want.dtype)
            n = want.numel()
            ni = len(inputs)
            words = _words(*[args[i].data_ptr() for i in inputs], got.data_ptr(), n, n, *([0] * max(1, ni)))
            getattr(lib, f"call_{entry}")(words)
            approximate = TRANSCENDENTAL.search(source.split("#endif  // KILN_KCG_PRELUDE")[1]) is not None
            _same(got, want, approximate, f"{case} on {dtype}")


@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float16, kiln.bfloat16], ids=str)
def test_strided_broadcast_and_row_kernels_run_as_eager_does(dtype):
    F = kiln.nn.functional
    x = kiln.randn(7, 33).to(dtype)
    x3 = kiln.randn(4, 7, 33).to(dtype)
    c = kiln.randn(7, 1).to(dtype)
    b = kiln.randn(33).to(dtype)
    w = kiln.randn(33).to(dtype)
    cases = [
        ("broadcast", lambda x, b, c: (x - b) * c + x * x, (x3, b, c)),
        ("softmax", lambda x: F.softmax(x, dim=-1), (x,)),
        ("log_softmax", lambda x: F.log_softmax(x, dim=-1), (x,)),
        ("layer_norm", lambda x, w, b: F.layer_norm(x, (33,), w, b), (x, w, b)),
        ("rms_norm", lambda x, w: F.rms_norm(x, (33,), w), (x, w)),
    ]
    with tempfile.TemporaryDirectory() as folder:
        for name, fn, args in cases:
            compiled = _capture(fn, *args)
            assert compiled.kernel_count == 1 and not compiled.eager_ops, name
            ((source, _, entry),) = compiled.cuda_sources
            (inputs,) = compiled.kernel_graph_inputs
            lib = _host_library([(source, entry)], folder, name)
            with kiln.no_grad():
                want = fn(*args)
            got = kiln.empty(want.shape, dtype=want.dtype)
            ptrs = [args[i].data_ptr() for i in inputs]
            if "row kernel" in source:
                words = _words(*ptrs, got.data_ptr(), 7, 33)
            else:
                # rank 3 in the output's (contiguous) order; strides in elements, a broadcast dim 0
                assert "rank 3, strided" in source, source[-3000:]
                strides = []
                for i in inputs:
                    t = args[i]
                    strides += [0] * (3 - t.dim()) + [s if n != 1 else 0 for s, n in zip(t.stride(), t.shape)]
                words = _words(*ptrs, got.data_ptr(), 4 * 7 * 33, 4, 7, 33, *strides)
            getattr(lib, f"call_{entry}")(words)
            tol = {kiln.float32: 1e-5, kiln.float16: 2e-3, kiln.bfloat16: 1.6e-2}[dtype]
            g, e = got.float().numpy(), want.float().numpy()
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol, err_msg=f"{name} on {dtype}")


def _recorded_runs(fn, *args):
    """[(graph, inputs)] of each graph a joint capture of fn runs (forward, then backward from a fixed
    gradient), with the inputs a replay hands it."""
    compiled = kiln.compile(fn, backend="eager")
    out = compiled(*args)  # capture
    gradient = kiln.linspace(-1, 1, out.numel()).reshape(out.shape).to(out.dtype)
    out.backward(gradient)
    runs = []
    programs = [p for e in _entries(compiled) for p in _graph_programs(e.program)]
    for p in programs:
        def recording(graph, inputs, run=p.runner):
            runs.append((graph, list(inputs)))
            return run(graph, inputs)
        p.runner = recording
    for a in args:
        a.grad = None
    compiled(*args).backward(gradient)  # replay
    return runs


def _contiguous_kernels(source):
    return "row kernel" in source or "contiguous" in source


@pytest.mark.parametrize("dtype", [kiln.float32, kiln.bfloat16], ids=str)
def test_forward_and_backward_kernels_run_as_the_cpu_kernels_do(dtype):
    """Every row kernel and contiguous pointwise kernel of the softmax, log_softmax, layer_norm and
    rms_norm training graphs that reads graph inputs and writes graph outputs (several reductions in
    one pass, per-row outputs, per-column inputs), emulated, against the same graph's LLVM kernels."""
    F = kiln.nn.functional

    def t(*shape):
        return kiln.randn(*shape).to(dtype).requires_grad_(True)

    cases = [
        ("softmax", lambda x: F.softmax(x, dim=-1), (t(5, 24),)),
        ("log_softmax", lambda x: F.log_softmax(x, dim=-1), (t(5, 24),)),
        ("layer_norm", lambda x, w, b: F.layer_norm(x, (24,), w, b), (t(5, 24), t(24), t(24))),
        ("rms_norm", lambda x, w: F.rms_norm(x, (24,), w), (t(5, 24), t(24))),
    ]
    checked = 0
    with tempfile.TemporaryDirectory() as folder:
        for name, fn, args in cases:
            for index, (graph, inputs) in enumerate(_recorded_runs(fn, *args)):
                cpu = _C._runtime.compile(graph, runs_without_autograd=True, target="cpu")
                cuda = _C._runtime.compile(graph, runs_without_autograd=True, target="cuda")
                with kiln.no_grad():
                    want = cpu.run(inputs)
                for k, (source, _, entry) in enumerate(cuda.cuda_sources):
                    ins, outs = cuda.kernel_graph_inputs[k], cuda.kernel_graph_outputs[k]
                    if min(ins + outs, default=0) < 0 or not _contiguous_kernels(source):
                        continue  # reads or writes another step's value
                    args_in = [inputs[i] for i in ins]
                    if any(not a.is_contiguous() for a in args_in):
                        continue
                    lib = _host_library([(source, entry)], folder, f"{name}_{index}_{k}")
                    got = [kiln.empty(want[o].shape, dtype=want[o].dtype) for o in outs]
                    ptrs = [a.data_ptr() for a in args_in] + [g.data_ptr() for g in got]
                    if "row kernel" in source:
                        words = _words(*ptrs, 5, 24)
                    else:
                        n = want[outs[0]].numel()
                        words = _words(*ptrs, n, n, *([0] * max(1, len(ins))))
                    getattr(lib, f"call_{entry}")(words)
                    tol = 1e-5 if dtype == kiln.float32 else 1.6e-2
                    for g, o in zip(got, outs):
                        np.testing.assert_allclose(g.float().numpy(), want[o].float().numpy(), rtol=tol, atol=tol,
                                                   err_msg=f"{name} graph {index} kernel {k}")
                    checked += 1
    assert checked >= 8, checked


@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float64, kiln.float16, kiln.bfloat16, kiln.int8], ids=str)
def test_vectorised_kernels_with_a_tail_and_misaligned_operands_run_as_eager_does(dtype):
    """Note [Vectorised pointwise kernels]: a contiguous kernel's vector loop and its scalar tail (n not a
    multiple of the vector), and the scalar loop alone when an operand is a view at an odd offset."""
    functions = {"mul_add": lambda x, y: x * y + x, "compare": lambda x, y: (x * y) > x}
    with tempfile.TemporaryDirectory() as folder:
        for what, fn in functions.items():
            n = 37
            x, y = (kiln.randn(n) * 3).to(dtype), (kiln.randn(n) * 3).to(dtype)
            compiled = _capture(fn, x, y)
            ((source, _, entry),) = compiled.cuda_sources
            assert "vectors of" in source and "kcg::Vec<" in source, source[:600]
            lib = _host_library([(source, entry)], folder, f"vec_{what}")
            with kiln.no_grad():
                want = fn(x, y)
            for offset_in, offset_out in ((0, 0), (1, 0), (0, 1)):
                # operands at element offsets into larger buffers: an odd offset misaligns the vector
                xb, yb = kiln.zeros(n + 1, dtype=dtype), kiln.zeros(n + 1, dtype=dtype)
                xb[offset_in:offset_in + n] = x
                yb[offset_in:offset_in + n] = y
                out = kiln.full((n + 1,), 7, dtype=want.dtype)
                xs, ys, got = xb[offset_in:offset_in + n], yb[offset_in:offset_in + n], out[offset_out:offset_out + n]
                (inputs,) = compiled.kernel_graph_inputs
                args = (xs, ys)
                words = _words(*[args[i].data_ptr() for i in inputs], got.data_ptr(), n, n, *([0] * len(inputs)))
                getattr(lib, f"call_{entry}")(words)
                assert kiln.equal(got, want), (what, offset_in, offset_out)
                # nothing written outside the result
                assert out[0 if offset_out else n].item() == kiln.full((1,), 7, dtype=want.dtype).item()
