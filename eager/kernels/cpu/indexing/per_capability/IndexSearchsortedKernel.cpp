// searchsorted's binary search, compiled per CPU capability: PyTorch's
// cus_lower_bound / cus_upper_bound (Bucketization.cpp), comparisons written as
// !(mid >= v) and !(mid > v) so NaNs order as PyTorch's do.
#include <type_traits>

#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/indexing/IndexStubs.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

template <typename T>
inline auto compute_value(const T& v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<float>(v);
  } else {
    return v;
  }
}

/// The first position in [start, end) whose boundary is >= val (or > val when `right`).
template <typename T>
int64_t bound(int64_t start, int64_t end, const T& val, const T* bd, const int64_t* sort, bool right) {
  const int64_t orig_start = start;
  const auto v = compute_value(val);
  while (start < end) {
    const int64_t mid = start + ((end - start) >> 1);
    const auto mid_val = compute_value(sort ? bd[sort[mid] + orig_start] : bd[mid]);
    const bool go_right = right ? !(mid_val > v) : !(mid_val >= v);
    if (go_right) {
      start = mid + 1;
    } else {
      end = mid;
    }
  }
  return start;
}

void searchsorted_kernel(const Tensor& result, const Tensor& input, const Tensor& boundaries, const Tensor& sorter,
                         bool right) {
  const int64_t numel = input.numel();
  const int64_t idim_in = input.dim() == 0 ? 1 : input.size(-1);
  const int64_t idim_bd = boundaries.size(-1);
  const bool one_row = boundaries.dim() == 1;
  const int64_t* sort = sorter.defined() ? sorter.data_ptr<int64_t>() : nullptr;
  const bool out_int32 = result.dtype() == DType::Int32;
  visit_dtype(input.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      KILN_FAIL(NotImplemented, "\"searchsorted_out_cpu\" not implemented for 'Bool'");
    } else {
      const T* in = input.data_ptr<T>();
      const T* bd = boundaries.data_ptr<T>();
      parallel_for(0, numel, 4096, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t start = one_row ? 0 : (i / idim_in) * idim_bd;
          const int64_t pos = bound(start, start + idim_bd, in[i], bd, sort, right) - start;
          if (out_int32) {
            result.data_ptr<int32_t>()[i] = static_cast<int32_t>(pos);
          } else {
            result.data_ptr<int64_t>()[i] = pos;
          }
        }
      });
    }
  });
}

}  // namespace
}  // namespace KILN_CPU_NS

KILN_REGISTER_DISPATCH(searchsorted_stub, &KILN_CPU_NS::searchsorted_kernel);

}  // namespace kiln::native
