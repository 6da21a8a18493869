// The CUDA kernels of the ops driven by a mask: nonzero (and nonzero.out, and
// nonzero_numpy behind nonzero(as_tuple=True); argwhere is a composite over
// nonzero) and masked_select(.out). nonzero learns its result size with one
// read-back (Note [nonzero on CUDA], MaskKernelSources.cpp); masked_select is
// the broadcast mask's nonzero and an index_select, so it waits for the GPU
// once too. Checks and messages as the CPU kernels' (cpu/indexing/IndexMasked.cpp).
#include <algorithm>
#include <vector>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/dispatch/Library.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/indexing/IndexUtils.h"
#include "eager/kernels/cuda/CudaCopy.h"
#include "eager/kernels/cuda/CudaKernels.h"
#include "eager/kernels/cuda/CudaLaunch.h"
#include "eager/kernels/cuda/MaskKernelSources.h"
#include "kiln/generated/Functions.h"

namespace kiln::native {

namespace {

using cuda_kernels::device_of;

/// The number of nonzero elements of the contiguous CUDA tensor `values`, with `first_rows` (chunks + 1
/// int64) holding each chunk's first result row: the count and first-rows kernels, then one 8-byte read-back.
int64_t count_nonzero_chunks(const Tensor& values, const Tensor& first_rows) {
  const int device = device_of(values);
  const void* in = values.data_ptr();
  long long n = values.numel();
  long long chunk = cuda_kernels::kNonzeroChunk;
  long long chunks = (n + chunk - 1) / chunk;
  void* rows = first_rows.data_ptr();
  void* total = static_cast<char*>(first_rows.data_ptr()) + chunks * static_cast<long long>(sizeof(long long));
  cuda_kernels::launch_rows(cuda_kernels::nonzero_count_kernel(values.dtype()), device, chunks,
                            {&in, &n, &chunk, &rows});
  cuda_kernels::launch_rows(cuda_kernels::nonzero_first_rows_kernel(), device, 1, {&rows, &chunks, &total});
  const Tensor host = to_copy_across_devices(first_rows.narrow(0, chunks, 1), std::nullopt,
                                             Device(DeviceType::CPU), false, std::nullopt);
  return host.data_ptr<int64_t>()[0];
}

Tensor nonzero_write(const Tensor& out_in, const Tensor& self_in) {
  std::vector<Tensor> all{self_in};
  if (out_in.defined()) all.push_back(out_in);
  all = cuda_kernels::on_one_device(all, "nonzero");
  const Tensor& self = all[0];
  cuda_kernels::check_kernel_dtype(self.dtype(), "nonzero");
  Tensor result = out_in.defined() ? all[1] : Tensor();
  if (result.defined()) {
    KILN_CHECK(result.dtype() == DType::Int64, "nonzero: Expected out tensor to have scalar type Long but got "
               "scalar type", scalar_type_name(result.dtype()));
    indexing::check_no_overlap(result, self);
  }
  const int64_t ndim = self.dim();
  KILN_CHECK(ndim <= cuda_kernels::kMaxDims, "nonzero is not supported for tensors with more than ",
             cuda_kernels::kMaxDims, " dimensions");
  const int device = device_of(self);
  cuda::DeviceGuard guard(device);
  const Tensor values = cuda_kernels::contiguous_as(self, self.dtype());
  long long n = values.numel();
  long long chunk = cuda_kernels::kNonzeroChunk;
  long long chunks = (n + chunk - 1) / chunk;
  Tensor first_rows;
  int64_t count = 0;
  if (chunks > 0) {
    first_rows = kiln::empty({chunks + 1}, DType::Int64, self.device());
    count = count_nonzero_chunks(values, first_rows);
  }
  // PyTorch's layout, as the CPU's: (count, ndim) with strides (1, count), each dim's column contiguous;
  // an out= tensor of the right shape keeps its strides.
  if (!result.defined()) {
    result = empty_strided(IntArrayRef{count, ndim}, IntArrayRef{1, std::max<int64_t>(count, 1)}, DType::Int64,
                           self.device());
  } else if (!(result.dim() == 2 && result.size(0) == count && result.size(1) == ndim)) {
    resize_output(result, IntArrayRef{ndim, count});
    result.impl()->set_geometry(IntArrayRef{count, ndim}, IntArrayRef{result.stride(1), result.stride(0)},
                                result.storage_offset());
  }
  if (count > 0 && ndim > 0) {
    cuda_kernels::NonzeroShapeParam shape{};
    shape.ndim = static_cast<int>(ndim);
    for (int64_t d = 0; d < ndim; ++d) shape.sizes[d] = self.size(d);
    const void* in = values.data_ptr();
    const void* rows = first_rows.data_ptr();
    void* out = result.data_ptr();
    long long row_stride = result.stride(0);
    long long column_stride = result.stride(1);
    cuda_kernels::launch_rows(cuda_kernels::nonzero_fill_kernel(values.dtype()), device, chunks,
                              {&in, &n, &chunk, &rows, &out, &row_stride, &column_stride, &shape});
  }
  return result;
}

Tensor nonzero_cuda(const Tensor& self) { return nonzero_write(Tensor(), self); }

Tensor nonzero_out_cuda(const Tensor& self, const Tensor& out) {
  nonzero_write(out, self);
  out.impl()->bump_version();
  return out;
}

std::vector<Tensor> nonzero_numpy_cuda(const Tensor& self) {
  // numpy's rule, as the CPU's: a 0-dim tensor reads as one element.
  const Tensor nonzero = nonzero_write(Tensor(), indexing::at_least_1d(self));
  std::vector<Tensor> columns;
  for (int64_t j = 0; j < nonzero.size(1); ++j) columns.push_back(select_impl(nonzero, 1, j));
  return columns;
}

Tensor masked_select_write(const Tensor& out_in, const Tensor& self_in, const Tensor& mask_in) {
  std::vector<Tensor> all{self_in, mask_in};
  if (out_in.defined()) all.push_back(out_in);
  all = cuda_kernels::on_one_device(all, "masked_select");
  const Tensor& self = all[0];
  const Tensor& mask = all[1];
  KILN_CHECK(mask.dtype() == DType::Bool, "masked_select: expected BoolTensor for mask");
  cuda_kernels::check_kernel_dtype(self.dtype(), "masked_select");
  if (out_in.defined()) {
    const Tensor& out = all[2];
    KILN_CHECK(self.dtype() == out.dtype(), "masked_select(): self and result must have the same scalar type");
    indexing::check_no_internal_overlap(out);
    indexing::check_disjoint(out, self);
    indexing::check_disjoint(out, mask);
  }
  cuda::DeviceGuard guard(device_of(self));
  // The broadcast mask's nonzero positions (one read-back), then those elements of the broadcast self.
  const DimVector shape = broadcast_shapes(mask.sizes(), self.sizes());
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  const Tensor flat_mask = cuda_kernels::contiguous_as(mask.expand(shape), DType::Bool).view(IntArrayRef{numel});
  const Tensor flat_self = cuda_kernels::contiguous_as(self.expand(shape), self.dtype()).view(IntArrayRef{numel});
  const Tensor positions = select_impl(nonzero_write(Tensor(), flat_mask), 1, 0);
  const Tensor result = kiln::index_select(flat_self, 0, positions);
  if (!out_in.defined()) return result;
  copy_to_out(result, all[2]);
  all[2].impl()->bump_version();
  return all[2];
}

Tensor masked_select_cuda(const Tensor& self, const Tensor& mask) { return masked_select_write(Tensor(), self, mask); }
Tensor masked_select_out_cuda(const Tensor& self, const Tensor& mask, const Tensor& out) {
  return masked_select_write(out, self, mask);
}

}  // namespace

void register_cuda_mask_kernels() {
  static Library* lib = new Library(Library::Kind::Impl, "kiln", DispatchKey::CUDA, __FILE__, __LINE__);
  lib->impl("nonzero", &nonzero_cuda);
  lib->impl("nonzero.out", &nonzero_out_cuda);
  lib->impl("nonzero_numpy", &nonzero_numpy_cuda);
  lib->impl("masked_select", &masked_select_cuda);
  lib->impl("masked_select.out", &masked_select_out_cuda);
}

}  // namespace kiln::native
