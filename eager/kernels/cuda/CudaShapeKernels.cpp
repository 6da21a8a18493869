// CUDA kernels of shape ops that move data: cat (a copy of each input into its
// slice of the result) and tril / triu (a copy, then masked_fill_ of the
// zeroed triangle with a mask built on the host). Both are compositions of the
// CUDA copy and masked_fill kernels, so they need no templates of their own.
#include <algorithm>
#include <cstring>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/dispatch/Library.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cuda/CudaCopy.h"
#include "eager/kernels/cuda/CudaKernels.h"
#include "eager/kernels/cuda/CudaLaunch.h"
#include "kiln/generated/Functions.h"

namespace kiln::native {

namespace {

Tensor cat_cuda(TensorList tensors, int64_t dim) {
  KILN_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  // A 1-D tensor with no elements is skipped, as torch's legacy rule.
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) {
    if (!(t.dim() == 1 && t.numel() == 0)) parts.push_back(t);
  }
  if (parts.empty()) parts.push_back(tensors[0]);
  const auto ops = cuda_kernels::on_one_device(parts, "cat");
  const Tensor& ref = ops[0];
  for (size_t i = 0; i < ops.size(); ++i) {
    KILN_CHECK(ops[i].dim() > 0, "zero-dimensional tensor (at position ", i, ") cannot be concatenated");
  }
  const int64_t ndim = ref.dim();
  const int64_t d = dim < 0 ? dim + ndim : dim;
  KILN_CHECK_INDEX(d >= 0 && d < ndim, "Dimension out of range (expected to be in range of [", -ndim, ", ", ndim - 1,
                   "], but got ", dim, ")");
  DType dtype = ref.dtype();
  int64_t total = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Tensor& t = ops[i];
    KILN_CHECK(t.dim() == ndim, "Tensors must have same number of dimensions: got ", ndim, " and ", t.dim());
    for (int64_t k = 0; k < ndim; ++k) {
      KILN_CHECK(k == d || t.size(k) == ref.size(k), "Sizes of tensors must match except in dimension ", d,
                 ". Expected size ", ref.size(k), " but got size ", t.size(k), " for tensor number ", i,
                 " in the list.");
    }
    dtype = promote_types(dtype, t.dtype());
    total += t.size(d);
  }
  cuda::DeviceGuard guard(cuda_kernels::device_of(ref));
  DimVector shape(ref.sizes());
  shape[static_cast<size_t>(d)] = total;
  Tensor out = kiln::empty(shape, dtype, ref.device());
  int64_t offset = 0;
  for (const Tensor& t : ops) {
    if (t.size(d) > 0) cuda_copy(out.narrow(d, offset, t.size(d)), t, false);
    offset += t.size(d);
  }
  return out;
}

/// self with the elements above (tril) or below (triu) the diagonal zeroed, in place.
Tensor zero_triangle(const Tensor& self, int64_t diagonal, bool lower, const char* op) {
  KILN_CHECK(self.dim() >= 2, op, ": input tensor must have at least 2 dimensions");
  const int64_t rows = self.size(-2);
  const int64_t cols = self.size(-1);
  if (self.numel() == 0) return self;
  // The [rows, cols] mask of the zeroed triangle, built on the host and broadcast over the batch dims.
  Tensor mask = kiln::empty({rows, cols}, DType::Bool, Device(DeviceType::CPU));
  bool* m = mask.data_ptr<bool>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) m[r * cols + c] = lower ? (c - r > diagonal) : (c - r < diagonal);
  }
  const Tensor on_device = to_copy_across_devices(mask, std::nullopt, self.device(), false, std::nullopt);
  self.masked_fill_(on_device, Scalar(int64_t{0}));
  return self;
}

Tensor copy_of(const Tensor& self) {
  return to_copy_across_devices(self, std::nullopt, self.device(), false, MemoryFormat::Contiguous);
}

Tensor tril_cuda(const Tensor& self, int64_t diagonal) { return zero_triangle(copy_of(self), diagonal, true, "tril"); }
Tensor triu_cuda(const Tensor& self, int64_t diagonal) { return zero_triangle(copy_of(self), diagonal, false, "triu"); }
Tensor tril_cuda_(const Tensor& self, int64_t diagonal) { return zero_triangle(self, diagonal, true, "tril"); }
Tensor triu_cuda_(const Tensor& self, int64_t diagonal) { return zero_triangle(self, diagonal, false, "triu"); }

}  // namespace

void register_cuda_shape_kernels() {
  static Library* lib = new Library(Library::Kind::Impl, "kiln", DispatchKey::CUDA, __FILE__, __LINE__);
  lib->impl("cat", &cat_cuda);
  lib->impl("tril", &tril_cuda);
  lib->impl("triu", &triu_cuda);
  lib->impl("tril_", &tril_cuda_);
  lib->impl("triu_", &triu_cuda_);
}

}  // namespace kiln::native
