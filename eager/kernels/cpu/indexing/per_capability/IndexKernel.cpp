// Indexing loops, compiled per CPU capability: index -> byte offsets, gather
// through offsets, put through offsets. See Note [Indexing by byte offsets]
// (eager/kernels/cpu/indexing/IndexUtils.h).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "eager/kernels/cpu/ElementWord.h"
#include "eager/kernels/cpu/Loops.h"
#include "eager/kernels/cpu/indexing/IndexStubs.h"
#include "eager/kernels/cpu/pointwise/BinaryOps.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

template <typename T>
inline T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// --- offsets ----------------------------------------------------------------------

/// One index value as a position in [0, size); `ok` turns false when it is out of range
/// (the position is then 0). Branch-free, so loops over indices vectorise.
template <IndexWrap W>
inline int64_t wrap_index(int64_t v, int64_t size, bool& ok) {
  if constexpr (W == IndexWrap::Modular) {
    const int64_t r = v % size;
    return r < 0 ? r + size : r;
  } else {
    const int64_t shifted = W == IndexWrap::Negative && v < 0 ? v + size : v;
    const bool valid = static_cast<uint64_t>(shifted) < static_cast<uint64_t>(size);
    ok &= valid;
    return valid ? shifted : 0;
  }
}

/// Calls fn(std::integral_constant<IndexWrap, W>{}) for the runtime `wrap`.
template <typename Fn>
decltype(auto) with_wrap(IndexWrap wrap, Fn&& fn) {
  switch (wrap) {
    case IndexWrap::Negative: return fn(std::integral_constant<IndexWrap, IndexWrap::Negative>{});
    case IndexWrap::NonNegative: return fn(std::integral_constant<IndexWrap, IndexWrap::NonNegative>{});
    case IndexWrap::Modular: break;
  }
  return fn(std::integral_constant<IndexWrap, IndexWrap::Modular>{});
}

template <typename IndexT, bool kAccumulate, IndexWrap W>
bool offsets_loop(TensorIterator& iter, int64_t size, int64_t stride) {
  std::atomic<bool> all_ok{true};
  constexpr int nt = kAccumulate ? 3 : 2;
  iter.for_each(
      [&](char** data, const int64_t* strides, int64_t n0, int64_t n1) {
        bool ok = true;
        for (int64_t j = 0; j < n1; ++j) {
          char* out = data[0] + j * strides[nt];
          const char* prev = kAccumulate ? data[1] + j * strides[nt + 1] : nullptr;
          const char* idx = data[nt - 1] + j * strides[2 * nt - 1];
          for (int64_t i = 0; i < n0; ++i) {
            const auto v = static_cast<int64_t>(*reinterpret_cast<const IndexT*>(idx + i * strides[nt - 1]));
            int64_t offset = wrap_index<W>(v, size, ok) * stride;
            if constexpr (kAccumulate) offset += *reinterpret_cast<const int64_t*>(prev + i * strides[1]);
            *reinterpret_cast<int64_t*>(out + i * strides[0]) = offset;
          }
        }
        if (!ok) all_ok.store(false, std::memory_order_relaxed);
      },
      kGrainSize);
  return all_ok.load(std::memory_order_relaxed);
}

template <typename IndexT>
bool offsets_for(TensorIterator& iter, int64_t size, int64_t stride, IndexWrap wrap) {
  const bool accumulate = iter.ninputs() == 2;
  return with_wrap(wrap, [&](auto w) {
    return accumulate ? offsets_loop<IndexT, true, decltype(w)::value>(iter, size, stride)
                      : offsets_loop<IndexT, false, decltype(w)::value>(iter, size, stride);
  });
}

bool index_offsets_kernel(TensorIterator& iter, int64_t size, int64_t stride, IndexWrap wrap) {
  return iter.input(iter.ninputs() - 1).dtype() == DType::Int32 ? offsets_for<int32_t>(iter, size, stride, wrap)
                                                                 : offsets_for<int64_t>(iter, size, stride, wrap);
}

// --- gather -------------------------------------------------------------------------

/// Elements are moved as raw bytes of their size: the gather never converts.
template <typename Word>
void gather_row(char* out, const char* src, const char* off, const int64_t* s, int64_t n) {
  if (s[1] == 0 && s[0] == static_cast<int64_t>(sizeof(Word)) && s[2] == 8) {
    // One source slice walked by the offsets (x[idx] on 1-D x, index_select along the last dim).
    Word* o = reinterpret_cast<Word*>(out);
    const auto* offs = reinterpret_cast<const int64_t*>(off);
    for (int64_t i = 0; i < n; ++i) o[i] = load<Word>(src + offs[i]);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t offset = *reinterpret_cast<const int64_t*>(off + i * s[2]);
    std::memcpy(out + i * s[0], src + i * s[1] + offset, sizeof(Word));
  }
}

void index_gather_kernel(TensorIterator& iter) {
  const int64_t item = iter.input(0).itemsize();
  iter.for_each(
      [&](char** data, const int64_t* s, int64_t n0, int64_t n1) {
        for (int64_t j = 0; j < n1; ++j) {
          char* out = data[0] + j * s[3];
          const char* src = data[1] + j * s[4];
          const char* off = data[2] + j * s[5];
          if (s[2] == 0 && s[0] == item && s[1] == item) {
            // One offset for a dense row: a slice copy (x[idx] on 2-D x, index_select along dim 0).
            std::memcpy(out, src + *reinterpret_cast<const int64_t*>(off), static_cast<size_t>(n0 * item));
            continue;
          }
          with_element_word(item, [&](auto word) { gather_row<decltype(word)>(out, src, off, s, n0); });
        }
      },
      kGrainSize);
}

/// Whether every index of a dense run is in range (wrapped as W).
template <typename IndexT, IndexWrap W>
bool dense_run_valid(const IndexT* ids, int64_t n, int64_t size) {
  const auto usize = static_cast<uint64_t>(size);
  uint64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = ids[i];
    if constexpr (W == IndexWrap::Negative) v += v < 0 ? size : 0;
    bad |= static_cast<uint64_t>(static_cast<uint64_t>(v) >= usize);
  }
  return bad == 0;
}

/// o[i] = src[ids[i] * stride] for a dense run of indices already checked (dense_run_valid).
template <typename IndexT, typename Word, IndexWrap W>
void gather_run_unchecked(Word* o, const char* src, const IndexT* ids, int64_t n, int64_t size, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = ids[i];
    if constexpr (W == IndexWrap::Negative) v += v < 0 ? size : 0;
    o[i] = load<Word>(src + v * stride);
  }
}

/// Whether a row of the iteration is one source slice walked by a dense run of
/// indices (x[idx] on 1-D x, gather along the last dim, index_select of a column).
template <typename IndexT, typename Word, IndexWrap W>
bool is_dense_run(const int64_t* s) {
  return W != IndexWrap::Modular && s[1] == 0 && s[0] == static_cast<int64_t>(sizeof(Word)) &&
         s[2] == static_cast<int64_t>(sizeof(IndexT));
}

template <typename IndexT, typename Word, IndexWrap W>
void gather_direct_row(char* out, const char* src, const char* idx, const int64_t* s, int64_t n, int64_t size,
                       int64_t stride, bool& ok) {
  if (is_dense_run<IndexT, Word, W>(s)) {
    // Check the run first (a vectorised pass over indices in L1), then gather
    // without per-element checks: gather(1) of 1024x1024 by 1024x64 went from
    // 70 to 53 us (torch 48-54), the checked loop's select sitting between each
    // index load and its element load.
    const auto* ids = reinterpret_cast<const IndexT*>(idx);
    if (!dense_run_valid<IndexT, W>(ids, n, size)) {
      ok = false;
      return;
    }
    gather_run_unchecked<IndexT, Word, W>(reinterpret_cast<Word*>(out), src, ids, n, size, stride);
    return;
  }
  bool row_ok = true;
  for (int64_t i = 0; i < n; ++i) {
    const auto v = static_cast<int64_t>(*reinterpret_cast<const IndexT*>(idx + i * s[2]));
    std::memcpy(out + i * s[0], src + i * s[1] + wrap_index<W>(v, size, row_ok) * stride, sizeof(Word));
  }
  ok &= row_ok;
}

/// Rows that all read the same dense run of indices (index_select along the last
/// dim: the index's outer stride is 0). The run is checked and turned into byte
/// offsets once, then four rows at a time gather through them: one offset load
/// feeds four element loads. index_select(1) of 1024x1024 float32 by 4096
/// indices went from 2.8 ms (a checked gather per row) to 1.2-1.6 (torch 1.8-1.9).
template <typename IndexT, typename Word, IndexWrap W>
bool gather_shared_index_rows(char* const* data, const int64_t* s, int64_t n0, int64_t n1, int64_t size,
                              int64_t stride) {
  const auto* ids = reinterpret_cast<const IndexT*>(data[2]);
  if (!dense_run_valid<IndexT, W>(ids, n0, size)) return false;
  std::vector<int64_t> offsets(static_cast<size_t>(n0));
  for (int64_t i = 0; i < n0; ++i) {
    int64_t v = ids[i];
    if constexpr (W == IndexWrap::Negative) v += v < 0 ? size : 0;
    offsets[static_cast<size_t>(i)] = v * stride;
  }
  const int64_t* off = offsets.data();
  auto out_row = [&](int64_t j) { return reinterpret_cast<Word*>(data[0] + j * s[3]); };
  auto src_row = [&](int64_t j) { return data[1] + j * s[4]; };
  int64_t j = 0;
  for (; j + 4 <= n1; j += 4) {
    Word* o0 = out_row(j);
    Word* o1 = out_row(j + 1);
    Word* o2 = out_row(j + 2);
    Word* o3 = out_row(j + 3);
    const char* s0 = src_row(j);
    const char* s1 = src_row(j + 1);
    const char* s2 = src_row(j + 2);
    const char* s3 = src_row(j + 3);
    for (int64_t i = 0; i < n0; ++i) {
      const int64_t o = off[i];
      o0[i] = load<Word>(s0 + o);
      o1[i] = load<Word>(s1 + o);
      o2[i] = load<Word>(s2 + o);
      o3[i] = load<Word>(s3 + o);
    }
  }
  for (; j < n1; ++j) {
    Word* o0 = out_row(j);
    const char* s0 = src_row(j);
    for (int64_t i = 0; i < n0; ++i) o0[i] = load<Word>(s0 + off[i]);
  }
  return true;
}

/// Rows of dense runs whose indices and outputs continue from row to row (gather
/// along the last dim of contiguous tensors): all n0 * n1 indices are checked in
/// one pass, then each row gathers from its own source slice unchecked. Rows of a
/// few elements (gather(1) by a 1024x8 index) otherwise pay a check loop per row.
template <typename IndexT, typename Word, IndexWrap W>
bool gather_dense_block(char* const* data, const int64_t* s, int64_t n0, int64_t n1, int64_t size,
                        int64_t stride) {
  const auto* ids = reinterpret_cast<const IndexT*>(data[2]);
  if (!dense_run_valid<IndexT, W>(ids, n0 * n1, size)) return false;
  auto* o = reinterpret_cast<Word*>(data[0]);
  for (int64_t j = 0; j < n1; ++j) {
    gather_run_unchecked<IndexT, Word, W>(o + j * n0, data[1] + j * s[4], ids + j * n0, n0, size, stride);
  }
  return true;
}

template <typename IndexT, IndexWrap W>
bool gather_direct_loop(TensorIterator& iter, int64_t size, int64_t stride) {
  const int64_t item = iter.input(0).itemsize();
  std::atomic<bool> all_ok{true};
  iter.for_each(
      [&](char** data, const int64_t* s, int64_t n0, int64_t n1) {
        bool ok = true;
        if (n1 > 1 && W != IndexWrap::Modular) {
          // Whole blocks of rows: one index run shared by every row, or runs that
          // continue from row to row (both checked before anything is read).
          const bool done = with_element_word(item, [&](auto word) {
            using Word = decltype(word);
            if (!is_dense_run<IndexT, Word, W>(s)) return false;
            if (s[5] == 0) {
              ok = gather_shared_index_rows<IndexT, Word, W>(data, s, n0, n1, size, stride);
              return true;
            }
            if (s[3] == n0 * s[0] && s[5] == n0 * s[2]) {
              ok = gather_dense_block<IndexT, Word, W>(data, s, n0, n1, size, stride);
              return true;
            }
            return false;
          });
          if (done) {
            if (!ok) all_ok.store(false, std::memory_order_relaxed);
            return;
          }
        }
        for (int64_t j = 0; j < n1; ++j) {
          char* out = data[0] + j * s[3];
          const char* src = data[1] + j * s[4];
          const char* idx = data[2] + j * s[5];
          if (s[2] == 0 && s[0] == item && s[1] == item) {
            // One index for a dense row: a slice copy (x[idx] on 2-D x, index_select along dim 0).
            const auto v = static_cast<int64_t>(*reinterpret_cast<const IndexT*>(idx));
            const int64_t offset = wrap_index<W>(v, size, ok) * stride;
            std::memcpy(out, src + offset, static_cast<size_t>(n0 * item));
            continue;
          }
          with_element_word(item, [&](auto word) {
            gather_direct_row<IndexT, decltype(word), W>(out, src, idx, s, n0, size, stride, ok);
          });
        }
        if (!ok) all_ok.store(false, std::memory_order_relaxed);
      },
      kGrainSize);
  return all_ok.load(std::memory_order_relaxed);
}

bool index_gather_direct_kernel(TensorIterator& iter, int64_t size, int64_t stride, IndexWrap wrap) {
  const bool is_int32 = iter.input(1).dtype() == DType::Int32;
  return with_wrap(wrap, [&](auto w) {
    return is_int32 ? gather_direct_loop<int32_t, decltype(w)::value>(iter, size, stride)
                    : gather_direct_loop<int64_t, decltype(w)::value>(iter, size, stride);
  });
}

// --- put ----------------------------------------------------------------------------

template <typename T>
struct PutOps {
  static void assign(char* d, const char* v, const T&) { std::memcpy(d, v, sizeof(T)); }
  static void add(char* d, const char* v, const T& alpha) {
    T& dst = *reinterpret_cast<T*>(d);
    const T src = load<T>(v);
    if constexpr (std::is_same_v<T, bool>) {
      dst = dst || (alpha && src);
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      dst = T(static_cast<float>(dst) + static_cast<float>(alpha) * static_cast<float>(src));
    } else {
      dst = static_cast<T>(dst + alpha * src);
    }
  }
  static void add_one(char* d, const char* v, const T&) {
    T& dst = *reinterpret_cast<T*>(d);
    const T src = load<T>(v);
    if constexpr (std::is_same_v<T, bool>) {
      dst = dst || src;
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      dst = T(static_cast<float>(dst) + static_cast<float>(src));
    } else {
      dst = static_cast<T>(dst + src);
    }
  }
  static void multiply(char* d, const char* v, const T&) {
    T& dst = *reinterpret_cast<T*>(d);
    const T src = load<T>(v);
    if constexpr (std::is_same_v<T, bool>) {
      dst = dst && src;
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      dst = T(static_cast<float>(dst) * static_cast<float>(src));
    } else {
      dst = static_cast<T>(dst * src);
    }
  }
  // scatter_reduce's amax/amin: a NaN on either side wins (as torch's).
  static void maximum(char* d, const char* v, const T&) {
    T& dst = *reinterpret_cast<T*>(d);
    const T src = load<T>(v);
    if constexpr (std::is_same_v<T, bool>) {
      dst = dst || src;
    } else if constexpr (is_complex_v<T>) {
      fail_not_implemented("scatter_reduce", dtype_of<T>());  // complex numbers are not ordered
    } else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const C a = static_cast<C>(dst), b = static_cast<C>(src);
      if (std::isnan(b) || (!std::isnan(a) && b > a)) dst = src;
    } else {
      if (src > dst) dst = src;
    }
  }
  static void minimum(char* d, const char* v, const T&) {
    T& dst = *reinterpret_cast<T*>(d);
    const T src = load<T>(v);
    if constexpr (std::is_same_v<T, bool>) {
      dst = dst && src;
    } else if constexpr (is_complex_v<T>) {
      fail_not_implemented("scatter_reduce", dtype_of<T>());
    } else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const C a = static_cast<C>(dst), b = static_cast<C>(src);
      if (std::isnan(b) || (!std::isnan(a) && b < a)) dst = src;
    } else {
      if (src < dst) dst = src;
    }
  }
};

template <typename T, void (*Op)(char*, const char*, const T&)>
void put_loop(TensorIterator& iter, const T& alpha) {
  constexpr auto item = static_cast<int64_t>(sizeof(T));
  constexpr bool kAssign = Op == &PutOps<T>::assign;
  iter.serial_for_each(
      [&](char** data, const int64_t* s, int64_t n0, int64_t n1) {
        for (int64_t j = 0; j < n1; ++j) {
          char* dst = data[0] + j * s[3];
          const char* val = data[1] + j * s[4];
          const char* off = data[2] + j * s[5];
          if (s[2] == 0) {
            // One offset for the whole row (x[idx] = v, index_add_ along dim 0): a slice update.
            char* row = dst + *reinterpret_cast<const int64_t*>(off);
            if (kAssign && s[0] == item && s[1] == item) {
              std::memmove(row, val, static_cast<size_t>(n0 * item));
            } else if (s[0] == item && s[1] == item) {
              for (int64_t i = 0; i < n0; ++i) Op(row + i * item, val + i * item, alpha);
            } else {
              for (int64_t i = 0; i < n0; ++i) Op(row + i * s[0], val + i * s[1], alpha);
            }
            continue;
          }
          for (int64_t i = 0; i < n0; ++i) {
            Op(dst + i * s[0] + *reinterpret_cast<const int64_t*>(off + i * s[2]), val + i * s[1], alpha);
          }
        }
      },
      0, iter.numel());
}

/// Whether every index the iterator's operand 2 holds is in [0, size).
template <typename IndexT>
bool put_indices_valid(TensorIterator& iter, int64_t size) {
  bool ok = true;
  iter.serial_for_each(
      [&](char** data, const int64_t* s, int64_t n0, int64_t n1) {
        for (int64_t j = 0; j < n1 && ok; ++j) {
          const char* idx = data[2] + j * s[5];
          if (s[2] == static_cast<int64_t>(sizeof(IndexT))) {
            ok &= dense_run_valid<IndexT, IndexWrap::NonNegative>(reinterpret_cast<const IndexT*>(idx), n0, size);
          } else {
            for (int64_t i = 0; i < n0; ++i) {
              wrap_index<IndexWrap::NonNegative>(static_cast<int64_t>(load<IndexT>(idx + i * s[2])), size, ok);
            }
          }
        }
      },
      0, iter.numel());
  return ok;
}

template <typename T, typename IndexT, void (*Op)(char*, const char*, const T&)>
void put_direct_loop(TensorIterator& iter, int64_t stride, const T& alpha) {
  iter.serial_for_each(
      [&](char** data, const int64_t* s, int64_t n0, int64_t n1) {
        for (int64_t j = 0; j < n1; ++j) {
          char* dst = data[0] + j * s[3];
          const char* val = data[1] + j * s[4];
          const char* idx = data[2] + j * s[5];
          for (int64_t i = 0; i < n0; ++i) {
            const auto v = static_cast<int64_t>(load<IndexT>(idx + i * s[2]));
            Op(dst + i * s[0] + v * stride, val + i * s[1], alpha);
          }
        }
      },
      0, iter.numel());
}

/// Calls run(op) for the PutOps<T> function of `reduce` (add with alpha 1 as add_one),
/// op a std::integral_constant holding it, over the dtype of the iterator's operand 0.
template <typename Run>
void with_put_op(TensorIterator& iter, PutReduce reduce, const Scalar& alpha, const Run& run) {
  visit_dtype_and_complex(iter.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Ops = PutOps<T>;
    using OpFn = void (*)(char*, const char*, const T&);
    const T a = alpha.to<T>();
    switch (reduce) {
      case PutReduce::Assign: run(std::integral_constant<OpFn, &Ops::assign>{}, a); break;
      case PutReduce::Add:
        if (alpha.equals(1.0) && !alpha.is_bool()) {
          run(std::integral_constant<OpFn, &Ops::add_one>{}, a);
        } else {
          run(std::integral_constant<OpFn, &Ops::add>{}, a);
        }
        break;
      case PutReduce::Multiply: run(std::integral_constant<OpFn, &Ops::multiply>{}, a); break;
      case PutReduce::Max: run(std::integral_constant<OpFn, &Ops::maximum>{}, a); break;
      case PutReduce::Min: run(std::integral_constant<OpFn, &Ops::minimum>{}, a); break;
    }
  });
}

template <typename IndexT>
bool index_put_direct_typed(TensorIterator& iter, int64_t size, int64_t stride, PutReduce reduce,
                            const Scalar& alpha) {
  if (!put_indices_valid<IndexT>(iter, size)) return false;
  with_put_op(iter, reduce, alpha, [&](auto op, const auto& a) {
    using T = std::decay_t<decltype(a)>;
    put_direct_loop<T, IndexT, decltype(op)::value>(iter, stride, a);
  });
  return true;
}

bool index_put_direct_kernel(TensorIterator& iter, int64_t size, int64_t stride, PutReduce reduce,
                             const Scalar& alpha) {
  return iter.input(2).dtype() == DType::Int32 ? index_put_direct_typed<int32_t>(iter, size, stride, reduce, alpha)
                                                : index_put_direct_typed<int64_t>(iter, size, stride, reduce, alpha);
}

void index_put_kernel(TensorIterator& iter, PutReduce reduce, const Scalar& alpha) {
  with_put_op(iter, reduce, alpha, [&](auto op, const auto& a) {
    using T = std::decay_t<decltype(a)>;
    put_loop<T, decltype(op)::value>(iter, a);
  });
}

}  // namespace
}  // namespace KILN_CPU_NS

KILN_REGISTER_DISPATCH(index_offsets_stub, &KILN_CPU_NS::index_offsets_kernel);
KILN_REGISTER_DISPATCH(index_gather_stub, &KILN_CPU_NS::index_gather_kernel);
KILN_REGISTER_DISPATCH(index_gather_direct_stub, &KILN_CPU_NS::index_gather_direct_kernel);
KILN_REGISTER_DISPATCH(index_put_stub, &KILN_CPU_NS::index_put_kernel);
KILN_REGISTER_DISPATCH(index_put_direct_stub, &KILN_CPU_NS::index_put_direct_kernel);

}  // namespace kiln::native
