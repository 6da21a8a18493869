"""The eager CUDA pointwise kernels of the backwards with two Scalar arguments (hardtanh_backward's
min_val and max_val, softplus_backward's beta and threshold: PointwiseMath.h's scalar_arguments) run
on the host, without a GPU: the kernel generated from the compiler's table for the Scalars a call
passes (codegen/cuda/CudaEagerPointwise.cpp, the Scalars as attributes of the op's one-node IR) and
the row's template (KernelSources.cpp's binary family, the Scalars as its two double parameters), built
by g++ with a shim for CUDA's built-ins, one thread looping over every element. Checked against kiln's
CPU kernels: bit for bit for hardtanh_backward, to rounding for softplus_backward (the host's libm
stands in for libdevice's exp)."""

import ctypes
import re
import shutil
import subprocess

import numpy as np
import pytest

import kiln
from kiln import _C
from cuda_host_shim import ONE_THREAD_SHIM

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="optional package g++ is not installed")

SHIM = ONE_THREAD_SHIM

# (what the coverage list calls it, the Scalars it was generated for: PointwiseMath's default_scalar)
GENERATED = {"hardtanh_backward Float -> Float": (-1.0, 1.0), "hardtanh_backward Double -> Double": (-1.0, 1.0),
             "softplus_backward Float -> Float": (1, 20), "softplus_backward Double -> Double": (1, 20)}
TEMPLATES = ("kiln_binary_hardtanh_backward_f32_f32", "kiln_binary_hardtanh_backward_f64_f64",
             "kiln_binary_softplus_backward_f32_f32", "kiln_binary_softplus_backward_f64_f64")


def _kernel_text(module: str, name: str) -> str:
    """One kernel's definition out of a family's module (from its `extern "C"` to the next one)."""
    start = module.index(f'extern "C" __global__ void {name}(')
    end = module.find('\nextern "C"', start + 1)
    return module[start:] if end < 0 else module[start:end]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    kernels, _ = _C._cuda_codegen.eager_pointwise_kernels()
    generated = {what: (name, body) for what, name, body in kernels if what in GENERATED}
    assert set(generated) == set(GENERATED)
    binary = next(source for family, source, _ in _C._cuda_kernel_modules() if family == "binary")
    driver = []
    for what, (name, _) in generated.items():
        driver.append(f'extern "C" void call_{name}(const kiln::Indexer<3>* ix, long long n) {{ {name}(*ix, n); }}')
    for name in TEMPLATES:
        driver.append(f'extern "C" void call_{name}(const kiln::Indexer<3>* ix, long long n, double s0, double s1) '
                      f'{{ {name}(*ix, n, s0, s1); }}')
    source = (SHIM + _C._cuda_codegen.eager_prelude() + "".join(body for _, body in generated.values()) +
              "".join(_kernel_text(binary, name) for name in TEMPLATES) + "\n".join(driver))
    folder = tmp_path_factory.mktemp("cuda_scalars_on_host")
    (folder / "kernels.cpp").write_text(source)
    done = subprocess.run(["g++", "-std=c++17", "-O1", "-ffp-contract=off", "-w", "-shared", "-fPIC",
                           str(folder / "kernels.cpp"), "-o", str(folder / "kernels.so")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return ctypes.CDLL(str(folder / "kernels.so")), {what: name for what, (name, _) in generated.items()}


class Indexer3(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p * 3), ("ndim", ctypes.c_int), ("sizes", ctypes.c_longlong * 16),
                ("strides", (ctypes.c_longlong * 16) * 3)]


def _run(fn, dtype, g, x, *scalars):
    """fn over three contiguous 1-D operands (out, g, x)."""
    out = np.full_like(g, 7)
    ix = Indexer3()
    ix.ndim, ix.sizes[0] = 1, g.size
    for k, a in enumerate((out, g, x)):
        ix.data[k] = a.ctypes.data
        ix.strides[k][0] = a.itemsize
    fn(ctypes.byref(ix), ctypes.c_longlong(g.size), *[ctypes.c_double(s) for s in scalars])
    return out


def _inputs(np_dtype, lo, hi):
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(200) * 4, [lo, hi, np.nan, -np.inf, np.inf, 0.0, 25.0, -30.0]])
    return rng.standard_normal(x.size).astype(np_dtype), x.astype(np_dtype)


@pytest.mark.parametrize("what", sorted(GENERATED))
def test_generated_kernel_reads_both_scalars(lib, what):
    so, names = lib
    np_dtype = np.float32 if "Float" in what else np.float64
    a, b = GENERATED[what]
    g, x = _inputs(np_dtype, a, b)
    got = _run(getattr(so, f"call_{names[what]}"), np_dtype, g, x)
    op = what.split()[0]
    want = getattr(_C._functions, op)(kiln.from_numpy(g), kiln.from_numpy(x), a, b).numpy()
    if op == "hardtanh_backward":
        assert np.array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6 if np_dtype == np.float32 else 1e-14)


@pytest.mark.parametrize("name", TEMPLATES)
def test_template_reads_both_scalars(lib, name):
    so, _ = lib
    np_dtype = np.float32 if name.endswith("f32_f32") else np.float64
    op = re.match(r"kiln_binary_(\w+_backward)_", name).group(1)
    scalars = (-0.5, 2.25) if op == "hardtanh_backward" else (2.0, 1.5)
    g, x = _inputs(np_dtype, *scalars)
    got = _run(getattr(so, f"call_{name}"), np_dtype, g, x, *scalars)
    want = getattr(_C._functions, op)(kiln.from_numpy(g), kiln.from_numpy(x), *scalars).numpy()
    if op == "hardtanh_backward":
        assert np.array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6 if np_dtype == np.float32 else 1e-13)
