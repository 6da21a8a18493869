// cpu_kernel and cpu_kernel_vec: turn a scalar lambda (and optionally a Vec
// lambda) into a TensorIterator loop. Only for files compiled per capability.
//
//   cpu_kernel_vec(iter,
//       [](float a, float b) { return a + b; },
//       [](Vec<float> a, Vec<float> b) { return a + b; });
//
// Inside the loop every operand has the iterator's common dtype (outputs
// first in the iterator, the lambda's arguments are the inputs in order).
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/vec/Vec.h"

namespace kiln::native::KILN_CPU_NS {

template <typename F>
struct LambdaTraits : LambdaTraits<decltype(&F::operator())> {};
template <typename C, typename R, typename... A>
struct LambdaTraits<R (C::*)(A...) const> {
  using result = R;
  using args = std::tuple<A...>;
  static constexpr size_t arity = sizeof...(A);
};

namespace loops_detail {

template <typename Traits, size_t... I>
auto load_args(char* const* data, const int64_t* strides, int64_t i, std::index_sequence<I...>) {
  return std::make_tuple(
      *reinterpret_cast<std::tuple_element_t<I, typename Traits::args>*>(data[I + 1] + i * strides[I + 1])...);
}

/// One strided row: out[i] = op(in...[i]).
template <typename Op>
void basic_row(char* const* data, const int64_t* strides, int64_t n, const Op& op) {
  using Traits = LambdaTraits<Op>;
  using R = typename Traits::result;
  constexpr auto idx = std::make_index_sequence<Traits::arity>{};
  for (int64_t i = 0; i < n; ++i) {
    *reinterpret_cast<R*>(data[0] + i * strides[0]) = std::apply(op, load_args<Traits>(data, strides, i, idx));
  }
}

/// One row where every operand is dense (stride = element size): written so
/// the compiler can vectorise it.
template <typename Op, size_t... I>
void contiguous_row(char* const* data, int64_t n, const Op& op, std::index_sequence<I...>) {
  using Traits = LambdaTraits<Op>;
  using R = typename Traits::result;
  R* out = reinterpret_cast<R*>(data[0]);
  std::tuple<const std::tuple_element_t<I, typename Traits::args>*...> in{
      reinterpret_cast<const std::tuple_element_t<I, typename Traits::args>*>(data[I + 1])...};
  for (int64_t i = 0; i < n; ++i) out[i] = op(std::get<I>(in)[i]...);
}

template <typename Op>
bool is_contiguous_row(const int64_t* strides) {
  using Traits = LambdaTraits<Op>;
  if (strides[0] != static_cast<int64_t>(sizeof(typename Traits::result))) return false;
  bool ok = true;
  [&]<size_t... I>(std::index_sequence<I...>) {
    ((ok = ok && strides[I + 1] == static_cast<int64_t>(sizeof(std::tuple_element_t<I, typename Traits::args>))), ...);
  }(std::make_index_sequence<Traits::arity>{});
  return ok;
}

/// Vectorised row: every operand dense, or an input broadcast (stride 0) that is splatted once.
template <typename Op, typename VOp, size_t... I>
void vectorized_row(char* const* data, const int64_t* strides, int64_t n, const Op& op, const VOp& vop,
                    std::index_sequence<I...>) {
  using Traits = LambdaTraits<Op>;
  using R = typename Traits::result;
  using V = Vec<R>;
  constexpr int64_t W = V::size;
  R* out = reinterpret_cast<R*>(data[0]);
  const bool is_scalar[] = {strides[I + 1] == 0 ...};
  const V scalar_vecs[] = {V::splat(*reinterpret_cast<const R*>(data[I + 1]))...};
  // The input pointers as locals: storeu is a memcpy, which may alias data[],
  // so pointers read from it would be reloaded after every store.
  const R* const in[] = {reinterpret_cast<const R*>(data[I + 1])...};
  auto load = [&](size_t k, int64_t i) { return is_scalar[k] ? scalar_vecs[k] : V::loadu(in[k] + i); };
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const V a = vop(load(I, i)...);
    const V b = vop(load(I, i + W)...);
    a.storeu(out + i);
    b.storeu(out + i + W);
  }
  for (; i + W <= n; i += W) vop(load(I, i)...).storeu(out + i);
  for (; i < n; ++i) {
    out[i] = op((is_scalar[I] ? *reinterpret_cast<const R*>(data[I + 1])
                              : reinterpret_cast<const R*>(data[I + 1])[i])...);
  }
}

template <typename Op>
bool is_vectorizable_row(const int64_t* strides) {
  using Traits = LambdaTraits<Op>;
  using R = typename Traits::result;
  if (strides[0] != static_cast<int64_t>(sizeof(R))) return false;
  for (size_t k = 1; k <= Traits::arity; ++k) {
    if (strides[k] != 0 && strides[k] != static_cast<int64_t>(sizeof(R))) return false;
  }
  return true;
}

inline void advance(char** data, const int64_t* outer_strides, int ntensors) {
  for (int k = 0; k < ntensors; ++k) data[k] += outer_strides[k];
}

}  // namespace loops_detail

/// Runs a scalar lambda over the iterator (one output, the inputs as arguments).
template <typename Op>
void cpu_kernel(TensorIterator& iter, const Op& op, int64_t grain_size = kGrainSize) {
  using Traits = LambdaTraits<Op>;
  const int nt = iter.ntensors();
  KILN_INTERNAL_ASSERT(static_cast<size_t>(iter.ninputs()) == Traits::arity && iter.noutputs() == 1);
  iter.for_each(
      [&](char** base, const int64_t* strides, int64_t size0, int64_t size1) {
        char* data[8];
        for (int k = 0; k < nt; ++k) data[k] = base[k];
        const bool dense = loops_detail::is_contiguous_row<Op>(strides);
        for (int64_t j = 0; j < size1; ++j) {
          if (dense) {
            loops_detail::contiguous_row(data, size0, op, std::make_index_sequence<Traits::arity>{});
          } else {
            loops_detail::basic_row(data, strides, size0, op);
          }
          loops_detail::advance(data, strides + nt, nt);
        }
      },
      grain_size);
  iter.cast_outputs();
}

/// Like cpu_kernel, with a Vec lambda for dense rows and broadcast scalars.
template <typename Op, typename VOp>
void cpu_kernel_vec(TensorIterator& iter, const Op& op, const VOp& vop, int64_t grain_size = kGrainSize) {
  using Traits = LambdaTraits<Op>;
  const int nt = iter.ntensors();
  KILN_INTERNAL_ASSERT(static_cast<size_t>(iter.ninputs()) == Traits::arity && iter.noutputs() == 1);
  iter.for_each(
      [&](char** base, const int64_t* strides, int64_t size0, int64_t size1) {
        char* data[8];
        for (int k = 0; k < nt; ++k) data[k] = base[k];
        const bool vectorizable = loops_detail::is_vectorizable_row<Op>(strides);
        for (int64_t j = 0; j < size1; ++j) {
          if (vectorizable) {
            loops_detail::vectorized_row(data, strides, size0, op, vop, std::make_index_sequence<Traits::arity>{});
          } else {
            loops_detail::basic_row(data, strides, size0, op);
          }
          loops_detail::advance(data, strides + nt, nt);
        }
      },
      grain_size);
  iter.cast_outputs();
}

/// A row loop for kernels whose operands have different element types (comparisons, where).
/// Runs row(data, strides, n) over every row of the iterator (rows of the inner
/// dimension; strides are the inner byte strides, outputs first), in parallel
/// above the grain size, then copies temporaries back into out= tensors.
template <typename Row>
void for_each_row(TensorIterator& iter, const Row& row, int64_t grain_size = kGrainSize) {
  const int nt = iter.ntensors();
  iter.for_each(
      [&](char** base, const int64_t* strides, int64_t size0, int64_t size1) {
        char* data[8];
        for (int k = 0; k < nt; ++k) data[k] = base[k];
        for (int64_t j = 0; j < size1; ++j) {
          row(data, strides, size0);
          for (int k = 0; k < nt; ++k) data[k] += strides[nt + k];
        }
      },
      grain_size);
  iter.cast_outputs();
}

}  // namespace kiln::native::KILN_CPU_NS
