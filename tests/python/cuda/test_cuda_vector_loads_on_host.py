"""The eager CUDA templates' vector loads (eager/kernels/cuda Note [Vector loads in the eager templates])
without a GPU: the pointwise loops (unary, binary, cast, where, fill; and a kernel generated from the
compiler's table) and the row templates (reductions, softmax, layer_norm/rms_norm forward and backward,
softmax backward) built by g++ with tests/python/helpers' block-of-threads shim and run on odd sizes,
misaligned offsets, padded rows, broadcast operands and 2-byte types, against numpy and kiln's CPU
kernels; which path a launch takes (vector_ok, row_span) is checked directly; and the PTX of each
family holds 128-bit (or 64-bit) vector loads and stores for sm_80 and sm_90."""

import ctypes
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import kiln
from kiln import _C
from cuda_host_shim import BLOCK_THREADS_SHIM, ROUNDED_INTRINSICS

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="optional package g++ is not installed")

KERNELS = {
    "unary": ["kiln_unary_neg_f32_f32", "kiln_unary_abs_f64_f64", "kiln_unary_neg_i16_i16"],
    "binary": ["kiln_binary_add_f32_f32", "kiln_binary_mul_bf16_bf16", "kiln_binary_eq_f32_b8",
               "kiln_binary_sub_u8_u8"],
    "cast": ["kiln_cast_f32_f64", "kiln_cast_bf16_f32", "kiln_cast_i64_u8"],
    "where": ["kiln_where_f32", "kiln_where_bf16"],
    "fill": ["kiln_fill_f64", "kiln_fill_u8"],
    "reduce": ["kiln_reduce_sum_f32_f32", "kiln_reduce_max_f64_f64", "kiln_reduce_sum_bf16_bf16"],
    "softmax": ["kiln_softmax_f32", "kiln_log_softmax_f64"],
}
ROW_FAMILIES = ("norm", "softmax_backward")  # whole families: their kernels share the block helpers
GENERATED = "mul Float -> Float"

DRIVER = r"""
extern "C" int probe_vector_ok3(const kiln::Indexer<3>* ix, int b0, int b1, int b2, int v) {
  const int bytes[3] = {b0, b1, b2};
  return kiln::vector_ok(*ix, bytes, v);
}
extern "C" void probe_row_span_f32(long long cols, const void* a, const void* b, long long* out) {
  const kiln::RowSpan s = kiln::row_span<float, 4>(cols, a, b);
  out[0] = s.head;
  out[1] = s.body_end;
}
"""

# name -> C parameter list of its run_ wrapper (the kernel's own, Indexers by pointer)
POINTWISE_PARAMS = {"unary": "const kiln::Indexer<2>* ix, long long n",
                    "binary": "const kiln::Indexer<3>* ix, long long n, double s0, double s1",
                    "cast": "const kiln::Indexer<2>* ix, long long n",
                    "where": "const kiln::Indexer<4>* ix, long long n"}


def _kernel_text(module: str, name: str) -> str:
    start = module.index(f'extern "C" __global__ void {name}(')
    end = module.find('\nextern "C"', start + 1)
    return module[start:] if end < 0 else module[start:end]


def _wrappers() -> str:
    out = []
    for family, names in KERNELS.items():
        for name in names:
            if family in POINTWISE_PARAMS:
                params = POINTWISE_PARAMS[family]
                args = ", ".join(["*ix"] + [p.split()[-1] for p in params.split(", ")[1:]])
            elif family == "fill":
                t = "double" if name.endswith("f64") else "unsigned char"
                params, args = f"const kiln::Indexer<1>* ix, long long n, {t} value", "*ix, n, value"
            else:  # reduce, softmax: (in, out, rows, cols), a block of 64 threads per row
                params, args = "unsigned grid, const void* in, void* out, long long rows, long long cols", None
            if args is None:
                kernel_in, kernel_out = _row_types(name)
                out.append(f'extern "C" void run_{name}({params}) {{ launch({name}, grid, 64u, '
                           f'(const {kernel_in}*)in, ({kernel_out}*)out, rows, cols); }}')
            else:
                out.append(f'extern "C" void run_{name}({params}) {{ launch({name}, 3u, 32u, {args}); }}')
    return "\n".join(out)


C_TYPES = {"f32": "float", "f64": "double", "bf16": "kiln::bfloat16"}


def _row_types(name):
    tag = name.rsplit("_", 1)[-1]
    return C_TYPES[tag], C_TYPES[tag]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    modules = {family: source for family, source, _ in _C._cuda_kernel_modules()}
    end = modules["norm"].index("}  // namespace kiln\n") + len("}  // namespace kiln\n")
    prelude = modules["norm"][:end]
    assert all(modules[f].startswith(prelude) for f in (*KERNELS, *ROW_FAMILIES))
    bodies = "".join(_kernel_text(modules[f], n) for f, names in KERNELS.items() for n in names)
    bodies += "".join(modules[f][end:] for f in ROW_FAMILIES)
    kernels, _ = _C._cuda_codegen.eager_pointwise_kernels()
    ((gen_name, gen_body),) = [(name, body) for what, name, body in kernels if what == GENERATED]
    wrappers = _wrappers() + "\n".join([
        f'extern "C" void run_generated(const kiln::Indexer<3>* ix, long long n) {{ launch({gen_name}, 3u, 32u, *ix, n); }}',
        'extern "C" void run_norm_forward_f32(unsigned grid, const float* x, const float* w, const float* b, float* y, '
        'float* m, float* r, long long rows, long long cols, double eps, int rms) { launch(kiln_norm_forward_f32, grid, '
        '64u, x, w, b, y, m, r, rows, cols, eps, rms); }',
        'extern "C" void run_norm_backward_input_f64(unsigned grid, const double* g, const double* x, const double* m, '
        'const double* r, const double* w, double* dx, long long rows, long long cols) { '
        'launch(kiln_norm_backward_input_f64, grid, 64u, g, x, m, r, w, dx, rows, cols); }',
        'extern "C" void run_softmax_backward_f32(unsigned grid, const float* g, const float* y, float* dx, long long rows, '
        'long long cols) { launch(kiln_softmax_backward_f32, grid, 64u, g, y, dx, rows, cols); }',
    ])
    # The generated kernel carries the codegen prelude (namespace kcg) and needs the eager one before it.
    source = (BLOCK_THREADS_SHIM + ROUNDED_INTRINSICS + "using std::log1p; using std::expm1; using std::tanh; using std::erf;\n"
              + prelude + bodies + gen_body + DRIVER + wrappers)
    folder = tmp_path_factory.mktemp("cuda_vector_loads_on_host")
    (folder / "kernels.cpp").write_text(source)
    done = subprocess.run(["g++", "-std=c++20", "-O1", "-ffp-contract=off", "-w", "-shared", "-fPIC", "-pthread",
                           str(folder / "kernels.cpp"), "-o", str(folder / "kernels.so")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return ctypes.CDLL(str(folder / "kernels.so"))


LL, D, U, P = ctypes.c_longlong, ctypes.c_double, ctypes.c_uint, ctypes.c_void_p


def indexer(n_ops):
    class Indexer(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p * n_ops), ("ndim", ctypes.c_int), ("sizes", ctypes.c_longlong * 16),
                    ("strides", (ctypes.c_longlong * 16) * n_ops)]
    return Indexer


def views(shape, operands):
    """An Indexer over `shape` (outermost first) of numpy views (any strides; stride 0 broadcasts)."""
    ix = indexer(len(operands))()
    ix.ndim = len(shape)
    for d, s in enumerate(reversed(shape)):
        ix.sizes[d] = s
    for k, a in enumerate(operands):
        ix.data[k] = a.ctypes.data
        for d, s in enumerate(reversed(a.strides)):
            ix.strides[k][d] = s
    return ix


def buffer(n, dtype, offset=0, seed=0):
    """n elements of `dtype` starting `offset` elements into a 64-byte-aligned buffer."""
    itemsize = np.dtype(dtype).itemsize
    raw = np.zeros((n + offset) * itemsize + 64, np.uint8)
    start = (-raw.ctypes.data) % 64
    a = raw[start:start + (n + offset) * itemsize].view(dtype)[offset:]
    rng = np.random.default_rng(seed)
    a[...] = (rng.standard_normal(n) * 8).astype(dtype) if dtype != np.bool_ else rng.random(n) < 0.5
    return a


# (elements, offset of every operand): vectors; vectors and a scalar tail; misaligned (scalar); one vector
# and a tail; fewer elements than a vector
LAYOUTS = [(1000, 0), (1003, 0), (1003, 1), (7, 0), (3, 0)]


def test_vector_ok_takes_the_vector_path_only_where_the_operands_allow(lib):
    a, b, out = (buffer(64, np.float32) for _ in range(3))
    check = lambda ix: bool(lib.probe_vector_ok3(ctypes.byref(ix), 4, 4, 4, 4))
    assert check(views((64,), [out, a, b]))
    assert check(views((64,), [out, a, np.broadcast_to(b[:1], (64,))]))  # a broadcast input reads one scalar
    assert not check(views((63,), [out[:63], a[1:], b[:63]]))  # one operand one element off
    assert not check(views((32,), [out[:32], a[::2], b[:32]]))  # strided innermost dim
    grid = buffer(8 * 12, np.float32).reshape(8, 12)
    assert check(views((8, 8), [grid[:, :8], grid[:, 4:], grid[:, :8]]))  # padded rows, 16-byte row strides
    assert not check(views((8, 6), [grid[:, :6], grid[:, :6], grid[:, :6]]))  # a vector would cross rows
    odd = buffer(8 * 13, np.float32).reshape(8, 13)
    assert not check(views((8, 8), [odd[:, :8], odd[:, :8], odd[:, :8]]))  # rows 52 bytes apart


def test_row_span_peels_a_head_to_the_first_aligned_column(lib):
    a = buffer(64, np.float32)
    out = np.zeros(2, np.int64)
    span = lambda cols, x, y: (lib.probe_row_span_f32(LL(cols), P(x.ctypes.data), P(y.ctypes.data),
                                                        P(out.ctypes.data)), tuple(out))[1]
    assert span(37, a, a) == (0, 36)
    assert span(37, a[1:], a[1:]) == (3, 35)  # 3 scalar columns, 8 vectors, 2 scalar columns
    assert span(2, a[1:], a[1:]) == (2, 2)
    assert span(37, a[1:], a[2:]) == (37, 37)  # different misalignments: the whole row scalar


@pytest.mark.parametrize("n,offset", LAYOUTS)
def test_pointwise_templates_on_every_path(lib, n, offset):
    x, y = buffer(n, np.float32, offset, 1), buffer(n, np.float32, offset, 2)
    out = buffer(n, np.float32, offset, 3)
    lib.run_kiln_unary_neg_f32_f32(ctypes.byref(views((n,), [out, x])), LL(n))
    assert np.array_equal(out, -x)
    lib.run_kiln_binary_add_f32_f32(ctypes.byref(views((n,), [out, x, y])), LL(n), D(2.5), D(0))
    np.testing.assert_allclose(out, x + np.float32(2.5) * y, rtol=1e-6)
    flags = buffer(n, np.bool_, offset)
    z = np.where(np.arange(n) % 3 == 0, x, y)  # (kept alive: the Indexer holds only its address)
    lib.run_kiln_binary_eq_f32_b8(ctypes.byref(views((n,), [flags, x, z])), LL(n))
    assert np.array_equal(flags, np.arange(n) % 3 == 0)
    d = buffer(n, np.float64, offset)
    lib.run_kiln_cast_f32_f64(ctypes.byref(views((n,), [d, x])), LL(n))
    assert np.array_equal(d, x.astype(np.float64))
    minus_d = -d
    lib.run_kiln_unary_abs_f64_f64(ctypes.byref(views((n,), [d, minus_d])), LL(n))
    assert np.array_equal(d, np.abs(x.astype(np.float64)))
    where = buffer(n, np.float32, offset)
    cond = buffer(n, np.bool_, offset, 4)
    lib.run_kiln_where_f32(ctypes.byref(views((n,), [where, cond, x, y])), LL(n))
    assert np.array_equal(where, np.where(cond, x, y))
    lib.run_kiln_fill_f64(ctypes.byref(views((n,), [d])), LL(n), D(-1.25))
    assert (d == -1.25).all()
    small = buffer(n, np.uint8, offset)
    lib.run_kiln_fill_u8(ctypes.byref(views((n,), [small])), LL(n), ctypes.c_ubyte(9))
    assert (small == 9).all()
    s16 = buffer(n, np.int16, offset)
    s16_in = s16.copy()
    lib.run_kiln_unary_neg_i16_i16(ctypes.byref(views((n,), [s16, s16_in])), LL(n))
    assert np.array_equal(s16, -buffer(n, np.int16, offset))
    assert bool(lib.probe_vector_ok3(ctypes.byref(views((n,), [out, x, y])), 4, 4, 4, 4)) == (offset == 0)


def bf16(a):
    """float32 -> bfloat16 bits (round to nearest even) as uint16, and back as float32."""
    bits = a.astype(np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return rounded, (rounded.astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("n,offset", [(1000, 0), (1003, 0), (1003, 3)])
def test_two_byte_pointwise_moves_eight_elements(lib, n, offset):
    xb, xf = bf16(buffer(n, np.float32, 0, 5))
    yb, yf = bf16(buffer(n, np.float32, 0, 6))
    x, y, out = (buffer(n, np.uint16, offset) for _ in range(3))
    x[...], y[...] = xb, yb
    lib.run_kiln_binary_mul_bf16_bf16(ctypes.byref(views((n,), [out, x, y])), LL(n), D(1), D(0))
    assert np.array_equal(out, bf16(xf * yf)[0])
    f = buffer(n, np.float32, offset)
    lib.run_kiln_cast_bf16_f32(ctypes.byref(views((n,), [f, x])), LL(n))
    assert np.array_equal(f, xf)
    cond = buffer(n, np.bool_, offset, 7)
    lib.run_kiln_where_bf16(ctypes.byref(views((n,), [out, cond, x, y])), LL(n))
    assert np.array_equal(out, np.where(cond, xb, yb))


def test_strided_and_broadcast_loops(lib):
    """Padded rows (vectors through the Indexer), odd rows (scalar), a transposed input (scalar), a
    broadcast row and a Python-number operand (stride 0: vectors, the scalar read once)."""
    x = buffer(9 * 20, np.float32, 0, 8).reshape(9, 20)
    for shape, a, b in [((9, 16), x[:, :16], x[:, 4:]), ((9, 13), x[:, :13], x[:, 1:14]),
                        ((9, 9), x[:, :9], x[:9, :9].T), ((9, 16), x[:, :16], np.broadcast_to(x[0, :16], (9, 16))),
                        ((9, 16), x[:, :16], np.broadcast_to(x[0, :1], (9, 16)))]:
        out = buffer(int(np.prod(shape)), np.float32).reshape(shape)
        lib.run_kiln_binary_add_f32_f32(ctypes.byref(views(shape, [out, a, b])), LL(out.size), D(1), D(0))
        assert np.array_equal(out, a + b), shape
        lib.run_generated(ctypes.byref(views(shape, [out, a, b])), LL(out.size))
        assert np.array_equal(out, a * b), shape
    wide = buffer(5 * 12, np.int64).reshape(5, 12)
    narrow = buffer(5 * 8, np.uint8).reshape(5, 8)
    lib.run_kiln_cast_i64_u8(ctypes.byref(views((5, 8), [narrow, wide[:, 2:10]])), LL(40))
    assert np.array_equal(narrow, wide[:, 2:10].astype(np.uint8))
    for offsets in [(0, 0, 0), (5, 0, 1)]:  # 8 bytes per vector; then misaligned operands
        diff, a, b = (buffer(64, np.uint8, o, seed) for seed, o in enumerate(offsets))
        lib.run_kiln_binary_sub_u8_u8(ctypes.byref(views((64,), [diff, a, b])), LL(64), D(1), D(0))
        assert np.array_equal(diff, a - b)


@pytest.mark.parametrize("cols,offset", [(256, 0), (37, 0), (37, 1), (5, 2), (3, 0)])
def test_row_reductions_and_softmax(lib, cols, offset):
    rows = 7
    x = buffer(rows * cols, np.float32, offset, 9).reshape(rows, cols)
    out = buffer(rows, np.float32)
    lib.run_kiln_reduce_sum_f32_f32(U(3), P(x.ctypes.data), P(out.ctypes.data), LL(rows), LL(cols))
    np.testing.assert_allclose(out, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-4)
    xd = buffer(rows * cols, np.float64, offset, 10).reshape(rows, cols)
    xd[1, cols // 2] = np.nan
    outd = buffer(rows, np.float64)
    lib.run_kiln_reduce_max_f64_f64(U(3), P(xd.ctypes.data), P(outd.ctypes.data), LL(rows), LL(cols))
    assert np.isnan(outd[1]) and np.array_equal(np.delete(outd, 1), np.delete(xd.max(1), 1))
    y = buffer(rows * cols, np.float32, offset).reshape(rows, cols)
    lib.run_kiln_softmax_f32(U(2), P(x.ctypes.data), P(y.ctypes.data), LL(rows), LL(cols))
    np.testing.assert_allclose(y, kiln.softmax(kiln.from_numpy(np.ascontiguousarray(x)), 1).numpy(), rtol=1e-5,
                               atol=1e-7)
    yd = buffer(rows * cols, np.float64, offset).reshape(rows, cols)
    xd[1, cols // 2] = 0.5
    lib.run_kiln_log_softmax_f64(U(2), P(xd.ctypes.data), P(yd.ctypes.data), LL(rows), LL(cols))
    np.testing.assert_allclose(yd, kiln.log_softmax(kiln.from_numpy(np.ascontiguousarray(xd)), 1).numpy(),
                               rtol=1e-12, atol=1e-12)
    xb, xf = bf16(buffer(rows * cols, np.float32, 0, 11))
    b = buffer(rows * cols, np.uint16, offset)
    b[...] = xb
    outb = buffer(rows, np.uint16)
    lib.run_kiln_reduce_sum_bf16_bf16(U(3), P(b.ctypes.data), P(outb.ctypes.data), LL(rows), LL(cols))
    got = (outb.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_allclose(got, xf.reshape(rows, cols).sum(1), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("cols,offset", [(160, 0), (150, 0), (150, 1), (3, 0)])
def test_norm_and_softmax_backward_rows(lib, cols, offset):
    rows = 6
    x = buffer(rows * cols, np.float32, offset, 12).reshape(rows, cols)
    w, b = buffer(cols, np.float32, 0, 13), buffer(cols, np.float32, 0, 14)
    y, m, r = buffer(rows * cols, np.float32, offset).reshape(rows, cols), np.zeros(rows, np.float32), np.zeros(
        rows, np.float32)
    lib.run_norm_forward_f32(U(2), P(x.ctypes.data), P(w.ctypes.data), P(b.ctypes.data), P(y.ctypes.data),
                             P(m.ctypes.data), P(r.ctypes.data), LL(rows), LL(cols), D(1e-5), ctypes.c_int(0))
    k = lambda a: kiln.from_numpy(np.ascontiguousarray(a))
    want_y, want_m, want_r = kiln.native_layer_norm(k(x), [cols], k(w), k(b), 1e-5)
    np.testing.assert_allclose(y, want_y.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(r, want_r.numpy().ravel(), rtol=1e-5)
    g = buffer(rows * cols, np.float64, offset, 15).reshape(rows, cols)
    xd = buffer(rows * cols, np.float64, offset, 16).reshape(rows, cols)
    wd = buffer(cols, np.float64, 0, 17)
    rstd = 1 / np.sqrt((xd ** 2).mean(1) + 1e-5)
    dx = buffer(rows * cols, np.float64, offset).reshape(rows, cols)
    lib.run_norm_backward_input_f64(U(2), P(g.ctypes.data), P(xd.ctypes.data), None, P(rstd.ctypes.data),
                                    P(wd.ctypes.data), P(dx.ctypes.data), LL(rows), LL(cols))
    want = _C._functions._norm_backward_input(k(g), k(xd), [cols], None, k(rstd.reshape(rows, 1)), k(wd))
    np.testing.assert_allclose(dx, want.numpy(), rtol=1e-10, atol=1e-12)
    gy = buffer(rows * cols, np.float32, offset, 18).reshape(rows, cols)
    sm = kiln.softmax(k(x), 1)
    smx = buffer(rows * cols, np.float32, offset).reshape(rows, cols)
    smx[...] = sm.numpy()
    gx = buffer(rows * cols, np.float32, offset).reshape(rows, cols)
    lib.run_softmax_backward_f32(U(3), P(gy.ctypes.data), P(smx.ctypes.data), P(gx.ctypes.data), LL(rows), LL(cols))
    want = _C._functions._softmax_backward_data(k(gy), sm, 1, kiln.float32)
    np.testing.assert_allclose(gx, want.numpy(), rtol=1e-4, atol=1e-6)


def _nvrtc_and_ptxas():
    try:
        _C._nvrtc_version()
    except RuntimeError:
        return None
    return shutil.which("ptxas") or next(
        (p for p in ("/usr/local/cuda/bin/ptxas", "/usr/local/cuda-13.0/bin/ptxas") if os.path.exists(p)),
        None)


VECTOR_ACCESS = re.compile(r"(ld|st)(\.global)?(\.nc)?\.v[248]\.\w+")  # stores: st.v4.b32 (KernelSources' store_vec)


@pytest.mark.skipif(_nvrtc_and_ptxas() is None, reason="optional package nvidia-cuda-nvrtc is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_template_family_emits_vector_accesses(arch, tmp_path):
    """One kernel per family with vectors, compiled by NVRTC and assembled by ptxas (test_cuda_kernel_sources
    assembles every instantiation): its PTX loads and stores in 16-byte (or 8-byte) vectors."""
    modules = {family: source for family, source, _ in _C._cuda_kernel_modules()}
    end = modules["norm"].index("}  // namespace kiln\n") + len("}  // namespace kiln\n")
    picks = {"unary": "kiln_unary_exp_f32_f32", "binary": "kiln_binary_add_f64_f64", "cast": "kiln_cast_f16_f32",
             "where": "kiln_where_bf16", "fill": "kiln_fill_f32", "reduce": "kiln_reduce_sum_f32_f32",
             "softmax": "kiln_softmax_f16"}
    kernels, _ = _C._cuda_codegen.eager_pointwise_kernels()
    ((_, gen_body),) = [(name, body) for what, name, body in kernels if what == "add Float -> Float"]
    sources = {f: modules[f][:end] + _kernel_text(modules[f], name) for f, name in picks.items()}
    sources["norm"] = modules["norm"]
    sources["softmax_backward"] = modules["softmax_backward"]
    sources["generated"] = modules["norm"][:end] + gen_body
    for family, source in sources.items():
        ptx = _C._nvrtc_compile(source, f"{family}.cu", arch, True).decode()
        accesses = {m.group(1) for m in VECTOR_ACCESS.finditer(ptx)}
        assert accesses == {"fill": {"st"}, "reduce": {"ld"}}.get(family, {"ld", "st"}), (family, accesses)
        path = tmp_path / f"{family}.ptx"
        path.write_text(ptx)
        done = subprocess.run([_nvrtc_and_ptxas(), f"-arch={arch}", "-O0", str(path), "-o", str(path) + ".cubin"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
