"""The block-cooperative eager CUDA kernels (layer_norm / rms_norm forward and backward, softmax
backward, nll_loss, the embedding backward, nonzero's three passes) run on the host, without a GPU: their NVRTC sources
built by g++ with a shim in which every thread of a block is a std::thread, __syncthreads a
std::barrier and __shfl_xor_sync an exchange through per-thread slots between two barriers (the
kernels call it with the whole block, as block_sum does), blocks one after another. Checked
against kiln's CPU kernels in float32 and float64 with blocks of 64 threads (two warps)."""

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

import kiln
from cuda_host_shim import BLOCK_THREADS_SHIM

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="optional package g++ is not installed")

SHIM = BLOCK_THREADS_SHIM

NONZERO_DTYPES = ("f32", "b8", "i64", "u8")

DRIVER = r"""
#define RUN(NAME, ...) extern "C" void run_##NAME(unsigned grid, __VA_ARGS__)
#define BLOCK 64u
RUN(norm_forward_f32, const float* x, const float* w, const float* b, float* y, float* m, float* r, long long rows,
    long long cols, double eps, int rms) {
  launch(kiln_norm_forward_f32, grid, BLOCK, x, w, b, y, m, r, rows, cols, eps, rms);
}
RUN(norm_backward_input_f64, const double* g, const double* x, const double* m, const double* r, const double* w,
    double* dx, long long rows, long long cols) {
  launch(kiln_norm_backward_input_f64, grid, BLOCK, g, x, m, r, w, dx, rows, cols);
}
RUN(norm_backward_params_f64, const double* g, const double* x, const double* m, const double* r, double* out,
    long long rows, long long cols) {
  launch(kiln_norm_backward_params_f64, grid, BLOCK, g, x, m, r, out, rows, cols);
}
RUN(softmax_backward_f64, const double* g, const double* y, double* dx, long long rows, long long cols) {
  launch(kiln_softmax_backward_f64, grid, BLOCK, g, y, dx, rows, cols);
}
RUN(log_softmax_backward_f64, const double* g, const double* y, double* dx, long long rows, long long cols) {
  launch(kiln_log_softmax_backward_f64, grid, BLOCK, g, y, dx, rows, cols);
}
RUN(nll_loss_forward_f64_i64, const double* x, const long long* t, const double* w, double* out, double* tw,
    long long batch, long long classes, long long ignore, int reduction, int per, long long* bad) {
  launch(kiln_nll_loss_forward_f64_i64, grid, BLOCK, x, t, w, out, tw, batch, classes, ignore, reduction, per, bad);
}
RUN(nll_loss_backward_f64_i64, const double* g, const long long* t, const double* w, const double* tw, double* gi,
    long long batch, long long classes, long long ignore, int reduction, int per, long long* bad) {
  launch(kiln_nll_loss_backward_f64_i64, grid, BLOCK, g, t, w, tw, gi, batch, classes, ignore, reduction, per, bad);
}
#define NONZERO(TAG, T) \
  RUN(nonzero_count_##TAG, const T* in, long long n, long long chunk, long long* counts) { \
    launch(kiln_nonzero_count_##TAG, grid, BLOCK, in, n, chunk, counts); \
  } \
  RUN(nonzero_fill_##TAG, const T* in, long long n, long long chunk, const long long* rows, long long* out, \
      long long row_stride, long long column_stride, const kiln::NonzeroShape* shape) { \
    launch(kiln_nonzero_fill_##TAG, grid, BLOCK, in, n, chunk, rows, out, row_stride, column_stride, *shape); \
  }
NONZERO(f32, float)
NONZERO(b8, bool)
NONZERO(i64, long long)
NONZERO(u8, unsigned char)
RUN(nonzero_first_rows, long long* counts, long long chunks, long long* total) {
  launch(kiln_nonzero_first_rows, grid, BLOCK, counts, chunks, total);
}
RUN(embedding_backward_f32, const float* g, const long long* order, const long long* starts, const long long* rows,
    float* gw, long long segments, long long dim, int by_freq) {
  launch(kiln_embedding_backward_f32, grid, BLOCK, g, order, starts, rows, gw, segments, dim, by_freq);
}
"""

FAMILIES = ("norm", "softmax_backward", "nll_loss", "embedding_backward", "nonzero")
P = ctypes.c_void_p
LL, I, D, U = ctypes.c_longlong, ctypes.c_int, ctypes.c_double, ctypes.c_uint


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    modules = {family: source for family, source, _ in kiln._C._cuda_kernel_modules()}
    end = modules["norm"].index("}  // namespace kiln\n") + len("}  // namespace kiln\n")
    prelude = modules["norm"][:end]
    assert all(modules[f].startswith(prelude) for f in FAMILIES)
    folder = tmp_path_factory.mktemp("cuda_rows_on_host")
    src = folder / "kernels.cpp"
    src.write_text(SHIM + prelude + "".join(modules[f][end:] for f in FAMILIES) + DRIVER)
    so = folder / "kernels.so"
    done = subprocess.run(["g++", "-std=c++20", "-O1", "-w", "-shared", "-fPIC", "-pthread", str(src), "-o", str(so)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return ctypes.CDLL(str(so))


def ptr(a):
    return P(None) if a is None else P(a.ctypes.data)


def k(a):
    return kiln.from_numpy(np.ascontiguousarray(a))


@pytest.mark.parametrize("rms", [False, True])
def test_norm_forward(lib, rms):
    rng = np.random.default_rng(0)
    rows, cols = 5, 150
    x = (rng.standard_normal((rows, cols)) * 3 + 1).astype(np.float32)
    w, b = rng.standard_normal(cols).astype(np.float32), rng.standard_normal(cols).astype(np.float32)
    y, m, r = np.zeros_like(x), np.zeros(rows, np.float32), np.zeros(rows, np.float32)
    lib.run_norm_forward_f32(U(2), ptr(x), ptr(w), None if rms else ptr(b), ptr(y), None if rms else ptr(m), ptr(r),
                             LL(rows), LL(cols), D(1e-5), I(int(rms)))
    if rms:
        want_y, want_r = kiln._C._functions._fused_rms_norm(k(x), [cols], k(w), 1e-5)
    else:
        want_y, want_m, want_r = kiln.native_layer_norm(k(x), [cols], k(w), k(b), 1e-5)
        np.testing.assert_allclose(m, want_m.numpy().ravel(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y, want_y.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(r, want_r.numpy().ravel(), rtol=1e-5)


@pytest.mark.parametrize("centered", [True, False])
def test_norm_backward(lib, centered):
    rng = np.random.default_rng(1)
    rows, cols = 6, 130
    x, g = rng.standard_normal((rows, cols)), rng.standard_normal((rows, cols))
    w = rng.standard_normal(cols)
    mean = x.mean(1) if centered else None
    rstd = 1 / np.sqrt(((x - (mean[:, None] if centered else 0)) ** 2).mean(1) + 1e-5)
    dx = np.zeros_like(x)
    lib.run_norm_backward_input_f64(U(3), ptr(g), ptr(x), ptr(mean), ptr(rstd), ptr(w), ptr(dx), LL(rows), LL(cols))
    kmean = k(mean.reshape(rows, 1)) if centered else None
    want = kiln._C._functions._norm_backward_input(k(g), k(x), [cols], kmean, k(rstd.reshape(rows, 1)), k(w))
    np.testing.assert_allclose(dx, want.numpy(), rtol=1e-10, atol=1e-12)
    dw, db = np.zeros(cols), np.zeros(cols)
    lib.run_norm_backward_params_f64(U(2), ptr(g), ptr(x), ptr(mean), ptr(rstd), ptr(dw), LL(rows), LL(cols))
    lib.run_norm_backward_params_f64(U(5), ptr(g), None, None, None, ptr(db), LL(rows), LL(cols))
    want_w = kiln._C._functions._norm_backward_weight(k(g), k(x), [cols], kmean, k(rstd.reshape(rows, 1)))
    np.testing.assert_allclose(dw, want_w.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(db, g.sum(0), rtol=1e-12, atol=1e-12)


def test_softmax_backward(lib):
    rng = np.random.default_rng(2)
    x, g = rng.standard_normal((4, 100)), rng.standard_normal((4, 100))
    y = kiln.softmax(k(x), 1)
    ly = kiln.log_softmax(k(x), 1)
    dx = np.zeros_like(x)
    y_np, ly_np = y.numpy(), ly.numpy()
    lib.run_softmax_backward_f64(U(3), ptr(g), ptr(y_np), ptr(dx), LL(4), LL(100))
    fns = kiln._C._functions
    np.testing.assert_allclose(dx, fns._softmax_backward_data(k(g), y, 1, kiln.float64).numpy(), rtol=1e-10, atol=1e-13)
    lib.run_log_softmax_backward_f64(U(3), ptr(g), ptr(ly_np), ptr(dx), LL(4), LL(100))
    want = fns._log_softmax_backward_data(k(g), ly, 1, kiln.float64).numpy()
    np.testing.assert_allclose(dx, want, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_nll_loss_forward_and_backward(lib, reduction):
    rng = np.random.default_rng(3)
    batch, classes = 150, 7
    x = rng.standard_normal((batch, classes))
    t = rng.integers(0, classes, batch).astype(np.int64)
    t[5] = -100
    w = rng.random(classes) + 0.5
    out = np.zeros(batch if reduction == 0 else 1)
    tw, bad = np.zeros(1), np.zeros(2, np.int64)
    lib.run_nll_loss_forward_f64_i64(U(1), ptr(x), ptr(t), ptr(w), ptr(out), ptr(tw), LL(batch), LL(classes),
                                     LL(-100), I(reduction), I(int(reduction == 0)), ptr(bad))
    want, want_tw = kiln.nll_loss_forward(k(x), k(t), k(w), reduction, -100)
    np.testing.assert_allclose(out, want.numpy().reshape(-1), rtol=1e-12)
    np.testing.assert_allclose(tw, want_tw.numpy().reshape(-1), rtol=1e-12)
    assert bad[0] == 0
    g = rng.standard_normal(batch) if reduction == 0 else np.array([1.7])
    gi = np.zeros_like(x)
    lib.run_nll_loss_backward_f64_i64(U(2), ptr(g), ptr(t), ptr(w), ptr(tw), ptr(gi), LL(batch), LL(classes),
                                      LL(-100), I(reduction), I(int(reduction == 0)), ptr(bad))
    kg = k(g) if reduction == 0 else k(np.array(1.7))
    want = kiln.nll_loss_backward(kg, k(x), k(t), k(w), reduction, -100, want_tw)
    np.testing.assert_allclose(gi, want.numpy(), rtol=1e-12)
    t[9] = 11
    lib.run_nll_loss_forward_f64_i64(U(1), ptr(x), ptr(t), ptr(w), ptr(out), ptr(tw), LL(batch), LL(classes),
                                     LL(-100), I(reduction), I(int(reduction == 0)), ptr(bad))
    assert list(bad) == [1, 11]


def test_embedding_backward_segments(lib):
    rng = np.random.default_rng(4)
    rows, dim = 9, 70
    idx = np.array([3, 1, 3, 0, 8, 3, 1, 5], np.int64)
    g = rng.standard_normal((len(idx), dim)).astype(np.float32)
    for padding_idx, by_freq in [(-1, False), (3, False), (-1, True)]:
        # the segments CudaIndexKernels.cpp builds: positions sorted stably by index, padding dropped
        order = [p for p in sorted(range(len(idx)), key=lambda p: idx[p]) if idx[p] != padding_idx]
        seg_rows = sorted({int(idx[p]) for p in order})
        starts = [next(i for i, p in enumerate(order) if idx[p] == r) for r in seg_rows] + [len(order)]
        gw = np.zeros((rows, dim), np.float32)
        order_a, starts_a, rows_a = (np.array(v, np.int64) for v in (order, starts, seg_rows))
        lib.run_embedding_backward_f32(U(2), ptr(g), ptr(order_a), ptr(starts_a), ptr(rows_a), ptr(gw),
                                       LL(len(seg_rows)), LL(dim), I(int(by_freq)))
        want = kiln._C._functions._embedding_dense_backward(k(g), k(idx), [rows, dim], padding_idx, by_freq)
        np.testing.assert_allclose(gw, want.numpy(), rtol=1e-6, atol=1e-6)


class NonzeroShape(ctypes.Structure):
    _fields_ = [("ndim", ctypes.c_int), ("sizes", ctypes.c_longlong * 16)]


@pytest.mark.parametrize("dtype", NONZERO_DTYPES)
@pytest.mark.parametrize("layout", ["columns", "rows"])
def test_nonzero_counts_first_rows_and_coordinates(lib, dtype, layout):
    """Note [nonzero on CUDA]: chunks of 150 elements (2 full tiles of 64 threads and a partial one) over a
    3-block grid, so blocks stride over chunks; the coordinates land in element order, as the CPU's."""
    rng = np.random.default_rng(7)
    shape = (7, 11, 13)
    x = ((rng.random(shape) < 0.3) * rng.integers(1, 200, shape)).astype(
        {"f32": np.float32, "b8": np.bool_, "i64": np.int64, "u8": np.uint8}[dtype])
    if dtype == "f32":
        x[0, 0, :3] = [np.nan, -0.0, 0.0]  # NaN counts, -0.0 does not
    n, chunk = x.size, 150
    chunks = -(-n // chunk)
    counts = np.full(chunks, -1, np.int64)
    getattr(lib, f"run_nonzero_count_{dtype}")(U(3), ptr(x), LL(n), LL(chunk), ptr(counts))
    per_chunk = [int(np.count_nonzero(x.reshape(-1)[c * chunk:(c + 1) * chunk])) for c in range(chunks)]
    assert counts.tolist() == per_chunk
    total = np.zeros(1, np.int64)
    lib.run_nonzero_first_rows(U(1), ptr(counts), LL(chunks), ptr(total))
    assert counts.tolist() == np.concatenate([[0], np.cumsum(per_chunk)[:-1]]).tolist()
    want = kiln.nonzero(k(x)).numpy()
    assert total[0] == len(want)
    count, ndim = len(want), len(shape)
    dims = NonzeroShape(ndim)
    for d, size in enumerate(shape):
        dims.sizes[d] = size
    # torch's (count, ndim) with strides (1, count), or a row-major out= tensor's (ndim, 1)
    out = np.full((ndim, count) if layout == "columns" else (count, ndim), -1, np.int64)
    strides = (1, count) if layout == "columns" else (ndim, 1)
    getattr(lib, f"run_nonzero_fill_{dtype}")(U(3), ptr(x), LL(n), LL(chunk), ptr(counts), ptr(out), LL(strides[0]),
                                              LL(strides[1]), ctypes.byref(dims))
    assert np.array_equal(out.T if layout == "columns" else out, want)
