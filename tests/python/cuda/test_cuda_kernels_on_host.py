"""The grid-stride eager CUDA kernels run on the host, without a GPU: the NVRTC sources of the
random, gather/scatter, masked_fill and optimizer families (the same text the device compiles)
are built by g++ with a small shim for CUDA's built-ins (threadIdx and friends as globals,
atomics as plain read-modify-writes, the half types' PTX conversions left out), and every
thread of a launch runs in turn. Those kernels never synchronise a block, so the sequential
run computes what the GPU computes. Checked against kiln's CPU kernels: bernoulli (dropout's
mask) bit for bit on the same (seed, offset) (Note [CUDA random numbers]), uniform and normal
to rounding, index_select/gather through the restrided Indexer (Note [Indexing through a
restrided operand]) with a bad index flagged, scatter_add, masked_fill, Adam and SGD; the
reducing puts (PutKernelSources.h): scatter_reduce's compare-and-swap reductions on 1-, 2-, 4-
and 8-byte words (Note [Atomic updates of any dtype]), index_put through byte offsets with
several index tensors, and scatter_reduce(mean)'s division."""

import ctypes
import math
import shutil
import subprocess

import numpy as np
import pytest

import kiln

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="optional package g++ is not installed")

SHIM = r"""
#include <cmath>
#include <cstdint>
#include <cstring>
using std::cos; using std::exp; using std::fmod; using std::log; using std::sin; using std::sqrt;
#define __global__
#define __device__
#define __shared__ static
#define __align__(n) alignas(n)
#define asm(...) ((void)0)
struct dim3 { unsigned x = 1, y = 1, z = 1; };
static dim3 threadIdx, blockIdx, blockDim, gridDim;
struct uint4 { unsigned x, y, z, w; };
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
template <typename T, typename F> inline T bits_as(F f) { T t; std::memcpy(&t, &f, sizeof(T)); return t; }
inline float __uint_as_float(unsigned u) { return bits_as<float>(u); }
inline unsigned __float_as_uint(float f) { return bits_as<unsigned>(f); }
inline float __int_as_float(int u) { return bits_as<float>(u); }
inline double __longlong_as_double(long long u) { return bits_as<double>(u); }
inline unsigned long long atomicExch(unsigned long long* p, unsigned long long v) { auto o = *p; *p = v; return o; }
inline float atomicAdd(float* p, float v) { auto o = *p; *p += v; return o; }
inline double atomicAdd(double* p, double v) { auto o = *p; *p += v; return o; }
inline int atomicAdd(int* p, int v) { auto o = *p; *p += v; return o; }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { auto o = *p; *p += v; return o; }
inline unsigned atomicCAS(unsigned* p, unsigned c, unsigned v) { auto o = *p; if (o == c) *p = v; return o; }
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long c, unsigned long long v) {
  auto o = *p; if (o == c) *p = v; return o;
}
"""

# Every thread of a grid of `grid` blocks of `block` threads, one after another.
DRIVER = r"""
template <typename... Args>
void launch(void (*kernel)(Args...), unsigned grid, unsigned block, Args... args) {
  gridDim.x = grid;
  blockDim.x = block;
  for (unsigned b = 0; b < grid; ++b) {
    for (unsigned t = 0; t < block; ++t) {
      blockIdx.x = b;
      threadIdx.x = t;
      kernel(args...);
    }
  }
}
#define RUN(NAME, ...) extern "C" void run_##NAME(__VA_ARGS__)
RUN(bernoulli_f32, float* o, long long n, unsigned long long s, unsigned long long off, unsigned th, int al) {
  launch(kiln_bernoulli_f32, 3, 7, o, n, s, off, th, al);
}
RUN(bernoulli_b8, bool* o, long long n, unsigned long long s, unsigned long long off, unsigned th, int al) {
  launch(kiln_bernoulli_b8, 2, 5, o, n, s, off, th, al);
}
RUN(uniform_f32, float* o, long long n, unsigned long long s, unsigned long long off, float f, float r) {
  launch(kiln_uniform_f32, 2, 9, o, n, s, off, f, r);
}
RUN(uniform_f64, double* o, long long n, unsigned long long s, unsigned long long off, double f, double r) {
  launch(kiln_uniform_f64, 2, 9, o, n, s, off, f, r);
}
RUN(normal_f32, float* o, long long n, unsigned long long s, unsigned long long off, float m, float d) {
  launch(kiln_normal_f32, 2, 9, o, n, s, off, m, d);
}
RUN(normal_f64, double* o, long long n, unsigned long long s, unsigned long long off, double m, double d) {
  launch(kiln_normal_f64, 2, 9, o, n, s, off, m, d);
}
RUN(gather_s4_i64, kiln::Indexer<3>* ix, long long n, long long stride, long long size, long long* bad) {
  launch(kiln_gather_s4_i64, 2, 4, *ix, n, stride, size, bad);
}
RUN(scatter_add_f32_i64, kiln::Indexer<3>* ix, long long n, long long stride, long long size, double alpha,
    long long* bad) {
  launch(kiln_scatter_add_f32_i64, 2, 4, *ix, n, stride, size, alpha, bad);
}
RUN(masked_fill_s4, kiln::Indexer<2>* ix, long long n, unsigned value) {
  launch(kiln_masked_fill_s4, 1, 6, *ix, n, value);
}
RUN(adam_f32, float* p, const float* g, float* m, float* v, float* vmax, long long n, double step_size, double b1,
    double b2, double wd, double decay, double inv_bc2_sqrt, double eps, int maximize, int decoupled) {
  launch(kiln_adam_f32, 2, 8, p, g, m, v, vmax, n, step_size, b1, b2, wd, decay, inv_bc2_sqrt, eps, maximize,
         decoupled);
}
RUN(sgd_f64, double* p, const double* g, double* buf, long long n, double lr, double mu, double damp, double wd,
    int nesterov, int maximize, int first) {
  launch(kiln_sgd_f64, 2, 8, p, g, buf, n, lr, mu, damp, wd, nesterov, maximize, first);
}
#define SCATTER_REDUCE(NAME) \
  RUN(NAME, kiln::Indexer<3>* ix, long long n, long long stride, long long size, long long* bad) { \
    launch(kiln_##NAME, 2, 4, *ix, n, stride, size, bad); \
  }
SCATTER_REDUCE(scatter_reduce_amax_f32_i64)
SCATTER_REDUCE(scatter_reduce_amin_bf16_i64)
SCATTER_REDUCE(scatter_reduce_prod_f64_i32)
SCATTER_REDUCE(scatter_reduce_sum_i8_i64)
SCATTER_REDUCE(scatter_reduce_prod_i64_i64)
SCATTER_REDUCE(scatter_reduce_sum_b8_i64)
RUN(index_offsets_i64, kiln::Indexer<2>* ix, long long n, long long size, long long stride, int add, long long* bad) {
  launch(kiln_index_offsets_i64, 2, 3, *ix, n, size, stride, add, bad);
}
RUN(offset_put_f32, kiln::Indexer<3>* ix, long long n, int add) { launch(kiln_offset_put_f32, 2, 3, *ix, n, add); }
RUN(offset_put_i16, kiln::Indexer<3>* ix, long long n, int add) { launch(kiln_offset_put_i16, 2, 3, *ix, n, add); }
RUN(mean_divide_i32, kiln::Indexer<2>* ix, long long n) { launch(kiln_mean_divide_i32, 1, 5, *ix, n); }
RUN(mean_divide_f32, kiln::Indexer<2>* ix, long long n) { launch(kiln_mean_divide_f32, 1, 5, *ix, n); }
"""

FAMILIES = ("random", "gather", "scatter", "masked_fill", "optim", "put")


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    modules = {family: source for family, source, _ in kiln._C._cuda_kernel_modules()}
    prelude_end = modules["random"].index("}  // namespace kiln\n") + len("}  // namespace kiln\n")
    prelude = modules["random"][:prelude_end]
    bodies = "".join(modules[f][prelude_end:] for f in FAMILIES)  # every module starts with the same prelude
    assert all(modules[f].startswith(prelude) for f in FAMILIES)
    folder = tmp_path_factory.mktemp("cuda_on_host")
    src = folder / "kernels.cpp"
    src.write_text(SHIM + prelude + bodies + DRIVER)
    so = folder / "kernels.so"
    done = subprocess.run(["g++", "-std=c++17", "-O1", "-w", "-shared", "-fPIC", str(src), "-o", str(so)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return ctypes.CDLL(str(so))


def ptr(a: np.ndarray):
    return ctypes.c_void_p(a.ctypes.data)


ULL, LL, U, I, F, D = ctypes.c_ulonglong, ctypes.c_longlong, ctypes.c_uint, ctypes.c_int, ctypes.c_float, ctypes.c_double


def test_bernoulli_is_the_cpu_mask_bit_for_bit(lib):
    n, p = 1000, 0.3
    cpu = kiln.empty(n).bernoulli_(p, generator=kiln.Generator().manual_seed(3)).numpy()
    cpu_bool = kiln.empty(n, dtype=kiln.bool).bernoulli_(p, generator=kiln.Generator().manual_seed(3)).numpy()
    out = np.full(n, 7.0, np.float32)
    lib.run_bernoulli_f32(ptr(out), LL(n), ULL(3), ULL(0), U(math.ceil(p * 2 ** 32)), I(0))
    assert np.array_equal(out, cpu)
    flags = np.zeros(n, np.bool_)
    lib.run_bernoulli_b8(ptr(flags), LL(n), ULL(3), ULL(0), U(math.ceil(p * 2 ** 32)), I(0))
    assert np.array_equal(flags, cpu_bool)


def test_uniform_and_normal_follow_the_cpu_stream(lib):
    n = 777
    gen = kiln.Generator().manual_seed(9)
    cpu32 = kiln.empty(n).uniform_(-2, 3, generator=gen).numpy()
    cpu64 = kiln.empty(n, dtype=kiln.float64).uniform_(-2, 3, generator=gen).numpy()
    out32, out64 = np.zeros(n, np.float32), np.zeros(n, np.float64)
    lib.run_uniform_f32(ptr(out32), LL(n), ULL(9), ULL(0), F(-2.0), F(5.0))
    # the float32 draw used ceil(777 / 64) * 16 = 208 blocks; the float64 one starts there
    lib.run_uniform_f64(ptr(out64), LL(n), ULL(9), ULL(208), D(-2.0), D(5.0))
    # the same uniforms; u * range + from may round once (FMA) on one side and twice on the other
    np.testing.assert_allclose(out32, cpu32, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out64, cpu64, rtol=1e-14, atol=1e-15)
    gen = kiln.Generator().manual_seed(4)
    n32 = kiln.empty(n).normal_(1.5, 2.0, generator=gen).numpy()
    n64 = kiln.empty(n, dtype=kiln.float64).normal_(1.5, 2.0, generator=gen).numpy()
    lib.run_normal_f32(ptr(out32), LL(n), ULL(4), ULL(0), F(1.5), F(2.0))
    lib.run_normal_f64(ptr(out64), LL(n), ULL(4), ULL(208), D(1.5), D(2.0))
    np.testing.assert_allclose(out32, n32, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out64, n64, rtol=1e-12, atol=1e-12)


def indexer(n_ops: int):
    class Indexer(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p * n_ops), ("ndim", ctypes.c_int), ("sizes", ctypes.c_longlong * 16),
                    ("strides", (ctypes.c_longlong * 16) * n_ops)]
    return Indexer


def make_indexer(sizes, operands):
    """operands: (array, element strides over `sizes`); innermost dim first, byte strides."""
    ix = indexer(len(operands))()
    ix.ndim = len(sizes)
    for d, s in enumerate(reversed(sizes)):
        ix.sizes[d] = s
    for k, (array, strides) in enumerate(operands):
        ix.data[k] = array.ctypes.data
        for d, s in enumerate(reversed(strides)):
            ix.strides[k][d] = s * array.itemsize
    return ix


def test_index_select_through_the_restrided_indexer(lib):
    x = np.arange(35, dtype=np.float32).reshape(5, 7)
    idx = np.array([4, 0, 0, 6], np.int64)
    out = np.zeros((5, 4), np.float32)
    bad = np.zeros(2, np.int64)
    # as index_select_cuda: out [5, 4]; the index along dim 1 only; x with stride 0 along dim 1
    ix = make_indexer([5, 4], [(out, [4, 1]), (idx, [0, 1]), (x, [7, 0])])
    lib.run_gather_s4_i64(ctypes.byref(ix), LL(20), LL(1 * 4), LL(7), ptr(bad))
    assert np.array_equal(out, x[:, idx]) and bad[0] == 0
    idx[2] = 7
    lib.run_gather_s4_i64(ctypes.byref(ix), LL(20), LL(1 * 4), LL(7), ptr(bad))
    assert list(bad) == [1, 7]


def test_gather_and_scatter_add(lib):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    idx = rng.integers(0, 6, (4, 3)).astype(np.int64)
    out = np.zeros((4, 3), np.float32)
    bad = np.zeros(2, np.int64)
    ix = make_indexer([4, 3], [(out, [3, 1]), (idx, [3, 1]), (x, [6, 0])])
    lib.run_gather_s4_i64(ctypes.byref(ix), LL(12), LL(4), LL(6), ptr(bad))
    assert np.array_equal(out, np.take_along_axis(x, idx, 1))
    dst = x.copy()
    src = rng.standard_normal((4, 3)).astype(np.float32)
    ix = make_indexer([4, 3], [(dst, [6, 0]), (idx, [3, 1]), (src, [3, 1])])
    lib.run_scatter_add_f32_i64(ctypes.byref(ix), LL(12), LL(4), LL(6), D(2.0), ptr(bad))
    want = kiln.from_numpy(x).scatter_add(1, kiln.from_numpy(idx), kiln.from_numpy(src * 2)).numpy()
    np.testing.assert_allclose(dst, want, rtol=1e-6)


def test_masked_fill_with_a_broadcast_mask(lib):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    mask = np.array([True, False, False, True])
    ix = make_indexer([2, 3, 4], [(x, [12, 4, 1]), (mask, [0, 0, 1])])
    lib.run_masked_fill_s4(ctypes.byref(ix), LL(24), U(np.float32(-1.5).view(np.uint32)))
    want = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    want[..., mask] = -1.5
    assert np.array_equal(x, want)


def test_adam_and_sgd_match_the_cpu_kernels(lib):
    rng = np.random.default_rng(1)
    p, g = rng.standard_normal(50).astype(np.float32), rng.standard_normal(50).astype(np.float32)
    m, v = rng.standard_normal(50).astype(np.float32), rng.random(50).astype(np.float32)
    vmax = v + 0.1
    tensors = [kiln.from_numpy(a.copy()) for a in (p, g, m, v, vmax)]
    lr, b1, b2, wd, eps, step = 1e-2, 0.9, 0.999, 0.1, 1e-8, 3
    kiln._C._functions._fused_adam_([tensors[0]], [tensors[1]], [tensors[2]], [tensors[3]], [tensors[4]], lr=lr,
                                    beta1=b1, beta2=b2, weight_decay=wd, eps=eps, amsgrad=True, maximize=False,
                                    step=step, decoupled_weight_decay=True)
    lib.run_adam_f32(ptr(p), ptr(g), ptr(m), ptr(v), ptr(vmax), LL(50), D(lr / (1 - b1 ** step)), D(b1), D(b2), D(wd),
                     D(1 - lr * wd), D(1 / math.sqrt(1 - b2 ** step)), D(eps), I(0), I(1))
    for got, t in zip((p, m, v, vmax), (tensors[0], tensors[2], tensors[3], tensors[4])):
        np.testing.assert_allclose(got, t.numpy(), rtol=1e-6, atol=1e-7)
    q, h, buf = rng.standard_normal(40), rng.standard_normal(40), rng.standard_normal(40)
    ts = [kiln.from_numpy(a.copy()) for a in (q, h, buf)]
    kiln._C._functions._fused_sgd_([ts[0]], [ts[1]], [ts[2]], lr=0.1, momentum=0.9, dampening=0.1,
                                   weight_decay=0.01, nesterov=True, maximize=True, is_first_step=False)
    lib.run_sgd_f64(ptr(q), ptr(h), ptr(buf), LL(40), D(0.1), D(0.9), D(0.1), D(0.01), I(1), I(1), I(0))
    np.testing.assert_allclose(q, ts[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(buf, ts[2].numpy(), rtol=1e-12)


# --- the reducing puts (PutKernelSources.h) -------------------------------------------------------------------


def run_scatter_reduce(lib, name, target, index, src, dim=1):
    """As CudaPutKernels.cpp's put_along_dim: target with stride 0 along dim, over the index's shape."""
    bad = np.zeros(2, np.int64)
    t_strides = [s // target.itemsize for s in target.strides]
    t_strides[dim] = 0
    ix = make_indexer(list(index.shape), [(target, t_strides), (index, [s // index.itemsize for s in index.strides]),
                                          (src, [s // src.itemsize for s in src.strides])])
    getattr(lib, f"run_{name}")(ctypes.byref(ix), LL(index.size), LL(target.strides[dim]), LL(target.shape[dim]),
                                ptr(bad))
    return bad


def bf16_bits(a: np.ndarray) -> np.ndarray:
    return (a.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # exact for these small values


@pytest.mark.parametrize("name,dtype,reduce", [
    ("scatter_reduce_amax_f32_i64", np.float32, "amax"),
    ("scatter_reduce_prod_f64_i32", np.float64, "prod"),
    ("scatter_reduce_sum_i8_i64", np.int8, "sum"),        # 1-byte words: CAS on the 32-bit word around them
    ("scatter_reduce_prod_i64_i64", np.int64, "prod"),    # 8-byte words
    ("scatter_reduce_sum_b8_i64", np.bool_, "sum"),
])
def test_scatter_reduce_cas_loops_match_the_cpu(lib, name, dtype, reduce):
    rng = np.random.default_rng(5)
    self_ = rng.integers(-3, 4, (3, 7)).astype(dtype)
    if dtype == np.float32:
        self_[0, 2] = np.nan  # amax: NaN wins
    index = rng.integers(0, 7, (3, 9)).astype(np.int32 if name.endswith("i32") else np.int64)
    src = rng.integers(-3, 4, (3, 9)).astype(dtype)
    want = kiln.from_numpy(self_.copy()).scatter_reduce(1, kiln.from_numpy(index.astype(np.int64)),
                                                         kiln.from_numpy(src), reduce).numpy()
    target = self_.copy()
    bad = run_scatter_reduce(lib, name, target, index, src)
    assert bad[0] == 0
    np.testing.assert_array_equal(target, want)
    index[1, 4] = 7
    assert list(run_scatter_reduce(lib, name, self_.copy(), index, src)) == [1, 7]


def test_scatter_reduce_on_bfloat16_halves_of_a_word(lib):
    # odd widths put the 2-byte elements in both halves of their 32-bit words
    rng = np.random.default_rng(6)
    self_ = rng.integers(-8, 9, (4, 5)).astype(np.float32)
    index = rng.integers(0, 5, (4, 3)).astype(np.int64)
    src = rng.integers(-8, 9, (4, 3)).astype(np.float32)
    want = kiln.from_numpy(self_).to(kiln.bfloat16).scatter_reduce(
        1, kiln.from_numpy(index), kiln.from_numpy(src).to(kiln.bfloat16), "amin").float().numpy()
    target = bf16_bits(self_)
    assert not run_scatter_reduce(lib, "scatter_reduce_amin_bf16_i64", target, index, bf16_bits(src))[0]
    np.testing.assert_array_equal((target.astype(np.uint32) << 16).view(np.float32), want)


def test_index_put_through_offsets_with_two_index_tensors(lib):
    # x[i, :, j] = v (accumulate or not) as CudaPutKernels.cpp runs it: offsets of each index (the second
    # accumulating), then the put over the result shape [B, 4] with x restrided (stride 0 over B)
    rng = np.random.default_rng(7)
    for dtype, name in ((np.float32, "offset_put_f32"), (np.int16, "offset_put_i16")):
        for accumulate in (False, True):
            x = rng.integers(-5, 6, (3, 4, 5)).astype(dtype)
            i = np.array([[2, -1, 0]], np.int64)        # broadcasts with j to B = [2, 3]
            j = np.array([[4], [-5]], np.int64)
            v = rng.integers(-5, 6, (2, 3, 4)).astype(dtype)
            if not accumulate:
                i, j = np.array([[2, 1, 0]], np.int64), np.array([[4], [-4]], np.int64)  # no duplicates
            want = kiln.from_numpy(x.copy()).index_put((kiln.from_numpy(i), None, kiln.from_numpy(j)),
                                                       kiln.from_numpy(v), accumulate).numpy()
            # not adjacent: dims (0, 2) move to the front, x read as [3, 5, 4]
            sizes, strides = [3, 5, 4], [20, 1, 5]
            ib, jb = np.broadcast_to(i, (2, 3)), np.broadcast_to(j, (2, 3))
            offsets = np.zeros((2, 3), np.int64)
            bad = np.zeros(2, np.int64)
            for k, (index, add) in enumerate(((ib, 0), (jb, 1))):
                ix = make_indexer([2, 3], [(offsets, [3, 1]), (index, [s // 8 for s in index.strides])])
                lib.run_index_offsets_i64(ctypes.byref(ix), LL(6), LL(sizes[k]), LL(strides[k] * x.itemsize), I(add),
                                          ptr(bad))
            assert bad[0] == 0
            ix = make_indexer([2, 3, 4], [(x, [0, 0, strides[2]]), (offsets, [3, 1, 0]), (v, [12, 4, 1])])
            getattr(lib, f"run_{name}")(ctypes.byref(ix), LL(24), I(int(accumulate)))
            np.testing.assert_array_equal(x, want)
    i = np.array([3, 0], np.int64)
    ix = make_indexer([2], [(np.zeros(2, np.int64), [1]), (i, [1])])
    lib.run_index_offsets_i64(ctypes.byref(ix), LL(2), LL(3), LL(4), I(0), ptr(bad))
    assert list(bad) == [1, 3]


def test_mean_divides_by_the_count_flooring_integers(lib):
    t = np.array([7, -7, 5, -6, 9], np.int32)
    counts = np.array([2, 2, 0, 4, 1], np.int32)
    ix = make_indexer([5], [(t, [1]), (counts, [1])])
    lib.run_mean_divide_i32(ctypes.byref(ix), LL(5))
    assert list(t) == [3, -4, 5, -2, 9]
    f = np.array([7, -7, 5, 1], np.float32)
    fc = np.array([2, 4, 0, 3], np.float32)
    ix = make_indexer([4], [(f, [1]), (fc, [1])])
    lib.run_mean_divide_f32(ctypes.byref(ix), LL(4))
    np.testing.assert_array_equal(f, np.array([3.5, -1.75, 5, 1], np.float32) / np.array([1, 1, 1, 3], np.float32))
