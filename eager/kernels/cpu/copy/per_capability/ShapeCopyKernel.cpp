// Layout copy loops, compiled per CPU capability. See Note [Layout copies]
// (eager/kernels/cpu/copy/ShapeCopy.h): rows of a plan as memcpy, reversed,
// broadcast or strided loops by element width, and tiled transposes.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/vec/StreamingCopy.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

/// Rows shorter than this many bytes are copied by a typed loop, not memcpy.
constexpr int64_t kMemcpyMinBytes = 64;

/// Element loads and stores that may alias any type (the bytes are not converted).
template <typename T>
inline T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
inline void store(char* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

/// dst[0, bytes) = src[0, bytes) for a dense row. Not glibc 2.36's memcpy for
/// these row lengths: on AMD znver3 its rep-movsb path ran roll(x, 3, 1) of a
/// 2048x2048 float32 tensor (2048 rows of 8180 bytes, source and destination
/// 12 bytes apart modulo 4 KiB) in 7.5-8 ms; this loop of 32-byte moves takes
/// 3.9-4.1 ms (torch 3.4-4.1), as fast as a whole-tensor copy.
inline void copy_bytes(char* dst, const char* src, int64_t bytes) {
#if defined(__AVX2__)
  int64_t i = 0;
  for (; i + 128 <= bytes; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 64));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 96));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i + 32), b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i + 64), c);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i + 96), d);
  }
  std::memcpy(dst + i, src + i, static_cast<size_t>(bytes - i));
#else
  std::memcpy(dst, src, static_cast<size_t>(bytes));
#endif
}

/// dst[i] = src[-i] for i in [0, n) (flip along the last dim). 4-byte elements
/// move 8 at a time through an AVX2 lane reversal (flip(-1) of 2048x2048
/// float32: 1.76 -> ~0.6 ms), streamed past the cache for big copies.
template <typename T>
void copy_row_reversed(char* dst, const char* src, int64_t n, bool streaming) {
  constexpr auto w = static_cast<int64_t>(sizeof(T));
  int64_t i = 0;
#if defined(__AVX2__)
  if constexpr (w == 4) {
    const __m256i reverse = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
    if (streaming) {
      for (; i < n && reinterpret_cast<uintptr_t>(dst + i * w) % 32 != 0; ++i) {
        store<T>(dst + i * w, load<T>(src - i * w));
      }
      for (; i + 8 <= n; i += 8) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src - (i + 7) * w));
        _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i * w), _mm256_permutevar8x32_epi32(v, reverse));
      }
    } else {
      for (; i + 8 <= n; i += 8) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src - (i + 7) * w));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i * w), _mm256_permutevar8x32_epi32(v, reverse));
      }
    }
  }
#endif
  for (; i < n; ++i) store<T>(dst + i * w, load<T>(src - i * w));
}

/// One row of n elements of width sizeof(T).
template <typename T>
void copy_row(char* dst, const char* src, int64_t n, int64_t ds, int64_t ss, bool streaming) {
  constexpr auto w = static_cast<int64_t>(sizeof(T));
  if (ds == w) {
    if (ss == w) {
      if (streaming && n * w >= 128) {
        copy_bytes_streaming(dst, src, n * w);
      } else if (n * w >= kMemcpyMinBytes) {
        copy_bytes(dst, src, n * w);
      } else {
        for (int64_t i = 0; i < n; ++i) store<T>(dst + i * w, load<T>(src + i * w));
      }
    } else if (ss == 0) {
      const T v = load<T>(src);
      for (int64_t i = 0; i < n; ++i) store<T>(dst + i * w, v);
    } else if (ss == -w) {
      copy_row_reversed<T>(dst, src, n, streaming);
    } else {
      for (int64_t i = 0; i < n; ++i) store<T>(dst + i * w, load<T>(src + i * ss));
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) store<T>(dst + i * ds, load<T>(src + i * ss));
}

/// Offsets of outer index `index` over dims [0, nouter) of the plan.
void outer_offsets(const StridedCopyPlan& p, int nouter, int64_t index, int64_t* counter, int64_t* doff,
                   int64_t* soff) {
  *doff = 0;
  *soff = 0;
  for (int d = nouter - 1; d >= 0; --d) {
    counter[d] = index % p.sizes[d];
    index /= p.sizes[d];
    *doff += counter[d] * p.dst_strides[d];
    *soff += counter[d] * p.src_strides[d];
  }
}

/// Steps the outer counter by one (row-major), updating the offsets.
void advance(const StridedCopyPlan& p, int nouter, int64_t* counter, int64_t* doff, int64_t* soff) {
  for (int d = nouter - 1; d >= 0; --d) {
    *doff += p.dst_strides[d];
    *soff += p.src_strides[d];
    if (++counter[d] < p.sizes[d]) return;
    *doff -= p.sizes[d] * p.dst_strides[d];
    *soff -= p.sizes[d] * p.src_strides[d];
    counter[d] = 0;
  }
}

template <typename T>
void copy_rows(const StridedCopyPlan& p, int64_t begin, int64_t end) {
  const int nouter = p.ndim - 1;
  const int64_t n = p.sizes[p.ndim - 1];
  const int64_t ds = p.dst_strides[p.ndim - 1];
  const int64_t ss = p.src_strides[p.ndim - 1];
  int64_t counter[StridedCopyPlan::kMaxCopyDims];
  int64_t doff = 0;
  int64_t soff = 0;
  outer_offsets(p, nouter, begin, counter, &doff, &soff);
  for (int64_t row = begin; row < end; ++row) {
    copy_row<T>(p.dst + doff, p.src + soff, n, ds, ss, p.streaming);
    advance(p, nouter, counter, &doff, &soff);
  }
#if defined(__AVX2__)
  if (p.streaming) _mm_sfence();  // order the streaming stores before the threads join
#endif
}

/// Scalar copy of the (r, c) rectangle of a tiled plan.
template <typename T>
void copy_rect(char* d, const char* s, int64_t d_row, int64_t s_col, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  constexpr auto w = static_cast<int64_t>(sizeof(T));
  for (int64_t r = r0; r < r1; ++r) {
    char* dr = d + r * d_row;
    const char* sr = s + r * w;
    for (int64_t c = c0; c < c1; ++c) store<T>(dr + c * w, load<T>(sr + c * s_col));
  }
}

#if defined(__AVX2__)
/// An 8x8 block of 4-byte elements: eight loads along the source's dense dim,
/// a register transpose, eight stores along the destination's.
inline void transpose_8x8_4byte(char* d, const char* s, int64_t d_row, int64_t s_col) {
  __m256 v[8];
  for (int i = 0; i < 8; ++i) v[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(s + i * s_col));
  const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]);
  const __m256 t1 = _mm256_unpackhi_ps(v[0], v[1]);
  const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]);
  const __m256 t3 = _mm256_unpackhi_ps(v[2], v[3]);
  const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]);
  const __m256 t5 = _mm256_unpackhi_ps(v[4], v[5]);
  const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]);
  const __m256 t7 = _mm256_unpackhi_ps(v[6], v[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44);
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44);
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44);
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44);
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  const __m256 rows[8] = {
      _mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
      _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
      _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
      _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31),
  };
  for (int i = 0; i < 8; ++i) _mm256_storeu_ps(reinterpret_cast<float*>(d + i * d_row), rows[i]);
}
#endif

/// One kTransposeTile square: 8x8 register transposes where the element is 4
/// bytes wide and the CPU has AVX2, scalar loops for the rest and the edges.
template <typename T>
void copy_tile(char* d, const char* s, int64_t d_row, int64_t s_col, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
#if defined(__AVX2__)
  if constexpr (sizeof(T) == 4) {
    constexpr int64_t w = 4;
    const int64_t r_full = r0 + (r1 - r0) / 8 * 8;
    const int64_t c_full = c0 + (c1 - c0) / 8 * 8;
    for (int64_t c = c0; c < c_full; c += 8) {
      for (int64_t r = r0; r < r_full; r += 8) transpose_8x8_4byte(d + r * d_row + c * w, s + r * w + c * s_col, d_row, s_col);
    }
    copy_rect<T>(d, s, d_row, s_col, r_full, r1, c0, c1);
    copy_rect<T>(d, s, d_row, s_col, r0, r_full, c_full, c1);
    return;
  }
#endif
  copy_rect<T>(d, s, d_row, s_col, r0, r1, c0, c1);
}

/// Bands of kTransposeTile rows of dim ndim-2, each copied tile by tile: the
/// destination is dense along dim ndim-1 and the source along dim ndim-2, so
/// a tile's reads and writes both stay within a few cache lines per row.
template <typename T>
void copy_tiles(const StridedCopyPlan& p, int64_t begin, int64_t end) {
  const int nouter = p.ndim - 2;
  const int64_t rows = p.sizes[p.ndim - 2];
  const int64_t cols = p.sizes[p.ndim - 1];
  const int64_t bands = (rows + kTransposeTile - 1) / kTransposeTile;
  const int64_t d_row = p.dst_strides[p.ndim - 2];
  const int64_t s_col = p.src_strides[p.ndim - 1];
  int64_t counter[StridedCopyPlan::kMaxCopyDims];
  int64_t doff = 0;
  int64_t soff = 0;
  int64_t outer = begin / bands;
  int64_t band = begin % bands;
  outer_offsets(p, nouter, outer, counter, &doff, &soff);
  for (int64_t item = begin; item < end; ++item) {
    const int64_t r0 = band * kTransposeTile;
    const int64_t r1 = std::min(r0 + kTransposeTile, rows);
    for (int64_t c0 = 0; c0 < cols; c0 += kTransposeTile) {
      copy_tile<T>(p.dst + doff, p.src + soff, d_row, s_col, r0, r1, c0, std::min(c0 + kTransposeTile, cols));
    }
    if (++band == bands) {
      band = 0;
      ++outer;
      advance(p, nouter, counter, &doff, &soff);
    }
  }
}

template <typename T>
void run_rows(const StridedCopyPlan& p, int64_t begin, int64_t end) {
  if (p.tiled) {
    copy_tiles<T>(p, begin, end);
  } else {
    copy_rows<T>(p, begin, end);
  }
}

void strided_copy_rows_kernel(const StridedCopyPlan& p, int64_t begin, int64_t end) {
  switch (p.itemsize) {
    case 1: return run_rows<uint8_t>(p, begin, end);
    case 2: return run_rows<uint16_t>(p, begin, end);
    case 4: return run_rows<uint32_t>(p, begin, end);
    case 8: return run_rows<uint64_t>(p, begin, end);
    default: break;
  }
  // Other widths: byte-wise copies of each element.
  const int nouter = p.ndim - 1;
  int64_t counter[StridedCopyPlan::kMaxCopyDims];
  int64_t doff = 0;
  int64_t soff = 0;
  outer_offsets(p, nouter, begin, counter, &doff, &soff);
  for (int64_t row = begin; row < end; ++row) {
    for (int64_t i = 0; i < p.sizes[p.ndim - 1]; ++i) {
      std::memmove(p.dst + doff + i * p.dst_strides[p.ndim - 1], p.src + soff + i * p.src_strides[p.ndim - 1],
                   static_cast<size_t>(p.itemsize));
    }
    advance(p, nouter, counter, &doff, &soff);
  }
}

/// A short piece of a concatenated row: fixed-size moves the compiler inlines
/// (cat of many narrow inputs copies many short pieces per row).
inline void copy_short(char* dst, const char* src, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) std::memcpy(dst + i, src + i, 32);
  for (; i + 8 <= n; i += 8) std::memcpy(dst + i, src + i, 8);
  for (; i + 4 <= n; i += 4) std::memcpy(dst + i, src + i, 4);
  for (; i < n; ++i) dst[i] = src[i];
}

void concat_rows_kernel(char* out, int64_t row_bytes, const RowPiece* pieces, size_t count, int64_t begin,
                        int64_t end, bool streaming) {
  for (int64_t row = begin; row < end; ++row) {
    char* dst = out + row * row_bytes;
    for (size_t k = 0; k < count; ++k) {
      const RowPiece& p = pieces[k];
      const char* src = p.data + row * p.bytes;
      if (streaming && p.bytes >= 128) {
        copy_bytes_streaming(dst, src, p.bytes);
      } else if (p.bytes >= 256) {
        copy_bytes(dst, src, p.bytes);
      } else {
        copy_short(dst, src, p.bytes);
      }
      dst += p.bytes;
    }
  }
#if defined(__AVX2__)
  if (streaming) _mm_sfence();  // order the streaming stores before the threads join
#endif
}

}  // namespace
}  // namespace KILN_CPU_NS

KILN_REGISTER_DISPATCH(strided_copy_rows_stub, &KILN_CPU_NS::strided_copy_rows_kernel);
KILN_REGISTER_DISPATCH(concat_rows_stub, &KILN_CPU_NS::concat_rows_kernel);

}  // namespace kiln::native
