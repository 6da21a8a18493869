// float32 GEMM on oneDNN (dnnl_sgemm), threaded by kiln's pool.
//
// Note [float32 GEMM on oneDNN]
// On AMD znver5 this workplace set OPENBLAS_CORETYPE=Haswell, which holds
// OpenBLAS to its AVX2 kernels (about 110-120 GFLOP/s on one core there).
// oneDNN's sgemm picks its kernels from cpuid at run time and uses AVX-512
// there: about twice as fast at every size measured (eager/kernels/cpu/README.md
// has the table), so float32 products go to oneDNN; float64 stays on OpenBLAS
// (oneDNN has no dgemm). On AMD znver3 (AVX2 only) the two measured within
// the machine's noise of each other on one thread (plain C, 3 rounds each,
// GFLOP/s: 512 OpenBLAS 68-73 / oneDNN 62-74, 1024 55-77 / 53-57, 2048
// 54-66 / 47-55), both on malloc'd operands. But oneDNN 2.6's AVX2 sgemm
// is slow when the row-major B is 64-byte aligned, as every kiln allocation
// is: 512^3 on one thread 38-41 GFLOP/s with B aligned, 64-73 with B 16 bytes
// off (plain C; the same through kiln.mm: 33-50 against 47-70), while OpenBLAS
// gives 55-71 either way. The slow cases are B 64-byte aligned with n about
// 400-512 (448^3 40 vs OpenBLAS 54, 512x2048x512 38 vs 64; 512^3 with ldb 528:
// 58 vs 57; 640^3 and 1024^3: even), which is also every 512-column piece of
// a split 1024 product. Below that oneDNN is ahead with B aligned (64^3 73-88
// vs 52-63, 784x64x128 73-78 vs 62-64, 384^3 81-84 vs 61-76). So at AVX2
// gemm_raw (Blas.cpp) keeps products under 2^25 multiply-adds on oneDNN and
// sends larger ones to OpenBLAS; the AVX-512 build uses oneDNN throughout.
//
// Debian's oneDNN is built on OpenMP. Letting it start OpenMP teams beside
// kiln's TBB pool would put two sets of spinning threads on the same cores, so
// every call runs single-threaded (the calling thread's OpenMP team size is set
// to 1 before each call) and kiln splits the product itself: the larger of
// m and n is cut into pieces, each piece a whole oneDNN call on
// its own rows or columns of c, taken by whichever thread is free (how many
// pieces per thread depends on the CPU: pieces_per_thread). Every element of c
// is still computed by one call over the whole of k, so the split does not
// change a result's summation.
#include "eager/kernels/cpu/linalg/GemmOneDnn.h"

#include <algorithm>
#include <dnnl.h>
#include <omp.h>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/CpuCapability.h"

namespace kiln::native {

namespace {

/// Below this many multiply-adds one call on one thread beats a split (a
/// 64x64x64 product takes ~1.3 us on one core).
constexpr int64_t kMinSplitWork = int64_t{1} << 19;
/// Pieces per thread, taken by whichever thread is free (parallel_for_each).
/// It depends on the CPU. On AMD znver5 (AVX-512), median fraction of the
/// 2-core peak on 2 threads: one piece per thread 0.75-0.82 at 1024 (a thread
/// that starts late leaves its half waiting), two 0.85-0.91; 512 and 2048 are
/// 0.79-0.94 either way, four pieces lost 3-5% at 512 and 2048 to the smaller
/// calls. On AMD znver3 (AVX2 only, where oneDNN's AVX2 kernels run) two
/// pieces per thread held 1024 at 50-56 GFLOP/s on 2 threads, no faster than
/// one thread, and one piece per thread gave 79-119 (median 91, torch 85);
/// the same split in plain C on pthreads: 63-81 for four pieces, 94-99 for
/// two. Every smaller call repacks the whole shared operand. (Products that
/// large now go to OpenBLAS at AVX2; the smaller ones still split here.)
/// On an Intel Xeon with AVX-512 (Sapphire Rapids class, 2026-12-03), best of
/// 5 on 2 threads, GFLOP/s, one / two / three pieces per thread: 512^3
/// 241-243 / 197-212 / 209-223, 1024^3 244-268 / 236-247 / 237-240, 2048^3
/// 273-285 / 251-257 / 247-252 (torch 227-262, 246-266, 262-273): one piece
/// per thread there, two only on AMD's AVX-512 cores.
int64_t pieces_per_thread() {
  static const int64_t pieces =
      cpu_capability() == CpuCapability::AVX512 && __builtin_cpu_is("amd") ? 2 : 1;
  return pieces;
}
/// Pieces are whole multiples of this many rows or columns.
constexpr int64_t kPieceAlign = 16;

void call_once_single_threaded(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                               const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                               int64_t ldc) {
  // Per call, not once per thread: the convolutions size this thread's team for their own calls.
  if (omp_get_max_threads() != 1) omp_set_num_threads(1);
  const dnnl_status_t status =
      dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  KILN_CHECK(status == dnnl_success, "sgemm: oneDNN failed (status ", static_cast<int>(status), ") for [", m, ", ", k,
             "] @ [", k, ", ", n, "]");
}

}  // namespace

void onednn_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const int threads = in_parallel_region() ? 1 : get_num_threads();
  const bool split_columns = n >= m;
  const int64_t extent = split_columns ? n : m;
  const int64_t units = (extent + kPieceAlign - 1) / kPieceAlign;
  const int64_t pieces =
      std::min<int64_t>({threads * pieces_per_thread(), units, std::max<int64_t>(1, m * n * k / kMinSplitWork)});
  if (pieces <= 1) {
    call_once_single_threaded(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const int64_t units_per_piece = (units + pieces - 1) / pieces;
  parallel_for_each(0, pieces, [&](int64_t p) {
    const int64_t lo = std::min(extent, p * units_per_piece * kPieceAlign);
    const int64_t hi = std::min(extent, (p + 1) * units_per_piece * kPieceAlign);
    if (lo >= hi) return;
    if (split_columns) {
      // Columns lo..hi of op(b) and of c.
      const float* b_piece = trans_b ? b + lo * ldb : b + lo;
      call_once_single_threaded(trans_a, trans_b, m, hi - lo, k, alpha, a, lda, b_piece, ldb, beta, c + lo, ldc);
    } else {
      // Rows lo..hi of op(a) and of c.
      const float* a_piece = trans_a ? a + lo : a + lo * lda;
      call_once_single_threaded(trans_a, trans_b, hi - lo, n, k, alpha, a_piece, lda, b, ldb, beta, c + lo * ldc, ldc);
    }
  });
}

}  // namespace kiln::native
