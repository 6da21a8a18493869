// A pointwise kernel's CPU launch (PointwiseLaunch.h).
#include "runtime/PointwiseLaunch.h"

#include <algorithm>

#include "eager/core/SmallVector.h"
#include "eager/kernels/Parallel.h"

namespace kiln::runtime {

IterationStrides iteration_strides(const codegen::FusionKernel& fk, std::span<const Tensor* const> inputs) {
  IterationStrides out;
  if (fk.kernel.contiguous) return out;
  const size_t r = static_cast<size_t>(fk.kernel.rank);
  const size_t ni = inputs.size();
  out.sizes.assign(fk.shape.begin(), fk.shape.end());
  if (out.sizes.empty()) out.sizes.push_back(1);
  out.strides.assign(ni * r, 0);
  const std::vector<size_t>& order = fk.order;
  for (size_t i = 0; i < ni && !order.empty(); ++i) {
    const Tensor& t = *inputs[i];
    const size_t tr = static_cast<size_t>(t.dim());
    for (size_t it = 0; it < r; ++it) {
      const size_t dim = order[it];
      if (dim + tr < r) continue;  // a leading broadcast dimension
      const size_t td = dim + tr - r;
      out.strides[i * r + it] = t.sizes()[td] == 1 ? 0 : t.strides()[td];
    }
  }
  return out;
}

void launch_cpu_pointwise(codegen::KernelFn fn, const codegen::FusionKernel& fk, void** d, const IterationStrides& at,
                          int64_t grain) {
  if (grain <= 0) grain = kGrainSize;
  int64_t numel = 1;
  for (int64_t x : fk.shape) numel *= x;
  if (fk.kernel.contiguous) {
    const int64_t flat[1] = {numel};
    const SmallVector<int64_t, 16> ones(fk.kernel.input_dtypes.size(), 1);  // no allocation per launch
    const int64_t* st = ones.data();
    parallel_for(0, numel, grain, [&](int64_t b, int64_t e) { fn(d, flat, st, b, e); });
    return;
  }
  const int64_t inner = at.sizes.back();
  const int64_t* sz = at.sizes.data();
  const int64_t* st = at.strides.data();
  if (fk.kernel.rank == 1) {
    parallel_for(0, numel, grain, [&](int64_t b, int64_t e) { fn(d, sz, st, b, e); });
  } else {
    parallel_for(0, numel / inner, std::max<int64_t>(1, grain / inner), [&](int64_t b, int64_t e) { fn(d, sz, st, b, e); });
  }
}

}  // namespace kiln::runtime
