// Comparison loops, compiled per CPU capability: float/double compare whole
// Vecs and write the lane masks as bools; integers, bool and float16/bfloat16
// (compared in float) run through cpu_kernel.
#include <type_traits>

#include "eager/kernels/cpu/Loops.h"
#include "eager/kernels/cpu/pointwise/CompareOpsStubs.h"
#include "eager/kernels/cpu/vec/VecBinary.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

/// bool out[i] = cmp(a[i], b[i]) over float/double rows; dense rows and
/// broadcast inputs (stride 0) go a Vec at a time.
template <typename T, typename Cmp, typename VecCmp>
void compare_floating(TensorIterator& iter, const Cmp& cmp, const VecCmp& vcmp) {
  for_each_row(iter, [&](char* const* data, const int64_t* s, int64_t n) {
    constexpr int64_t W = Vec<T>::size;
    const char* a = data[1];
    const char* b = data[2];
    int64_t i = 0;
    const auto dense_or_broadcast = [](int64_t stride) { return stride == 0 || stride == sizeof(T); };
    if (s[0] == 1 && dense_or_broadcast(s[1]) && dense_or_broadcast(s[2])) {
      bool* out = reinterpret_cast<bool*>(data[0]);
      for (; i + W <= n; i += W) {
        store_mask_as_bools<T>(vcmp(load_vec_at<T>(a, s[1], i), load_vec_at<T>(b, s[2], i)), out + i);
      }
    }
    for (; i < n; ++i) {
      *reinterpret_cast<bool*>(data[0] + i * s[0]) = cmp(load_at<T>(a, s[1], i), load_at<T>(b, s[2], i));
    }
  });
}

/// Runs `cmp` (a generic lambda on two values of one type, also applied to the
/// Vec registers' native vectors) in the inputs' dtype.
/// Equality (kEquality) also takes complex inputs; the orderings do not (complex numbers are unordered).
template <bool kEquality, typename Cmp>
void compare_with(TensorIterator& iter, const Cmp& cmp) {
  auto run = [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      compare_floating<T>(iter, cmp, [&](Vec<T> a, Vec<T> b) { return cmp(a.v, b.v); });
    } else if constexpr (is_reduced_float_v<T>) {
      cpu_kernel(iter, [&](T a, T b) -> bool { return cmp(static_cast<float>(a), static_cast<float>(b)); });
    } else {
      cpu_kernel(iter, [&](T a, T b) -> bool { return cmp(a, b); });
    }
  };
  if constexpr (kEquality) {
    visit_dtype_and_complex(iter.input(0).dtype(), run);
  } else {
    visit_dtype(iter.input(0).dtype(), run);
  }
}

void compare_kernel(TensorIterator& iter, CompareOp op) {
  switch (op) {
    case CompareOp::Eq: return compare_with<true>(iter, [](auto a, auto b) { return a == b; });
    case CompareOp::Ne: return compare_with<true>(iter, [](auto a, auto b) { return a != b; });
    case CompareOp::Lt: return compare_with<false>(iter, [](auto a, auto b) { return a < b; });
    case CompareOp::Le: return compare_with<false>(iter, [](auto a, auto b) { return a <= b; });
    case CompareOp::Gt: return compare_with<false>(iter, [](auto a, auto b) { return a > b; });
    case CompareOp::Ge: return compare_with<false>(iter, [](auto a, auto b) { return a >= b; });
  }
}

}  // namespace
}  // namespace KILN_CPU_NS

KILN_REGISTER_DISPATCH(compare_stub, &KILN_CPU_NS::compare_kernel);

}  // namespace kiln::native
