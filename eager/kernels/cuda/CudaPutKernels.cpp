// The CUDA kernels of the reducing puts: index_put(_) with any index tensors
// (several, broadcast together, with plain dims between them; bool and uint8
// masks), assigning or accumulating, and scatter_reduce (sum, prod, mean,
// amax, amin; include_self). Their checks and steps are the CPU kernels' own
// (plan_index_put and AdvancedIndex in cpu/indexing/IndexAdvanced.h,
// cpu/indexing/ScatterGatherChecks.h, Note [scatter_reduce on any device]);
// only the loops are CUDA's (PutKernelSources.h, Note [Atomic updates of any
// dtype]). A bad index raises after the kernel (Note [Bad indices on CUDA]).
#include <optional>
#include <string_view>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/dispatch/Library.h"
#include "eager/kernels/cpu/indexing/IndexAdvanced.h"
#include "eager/kernels/cpu/indexing/ScatterGatherChecks.h"
#include "eager/kernels/cpu/indexing/ScatterReduce.h"
#include "eager/kernels/cuda/CudaCopy.h"
#include "eager/kernels/cuda/CudaIndexOperands.h"
#include "eager/kernels/cuda/CudaKernels.h"
#include "eager/kernels/cuda/CudaLaunch.h"
#include "eager/kernels/cuda/IndexKernelSources.h"
#include "eager/kernels/cuda/PutKernelSources.h"
#include "kiln/generated/Functions.h"

namespace kiln::native {

namespace {

using cuda_kernels::device_of;
using cuda_kernels::indexer_over;
using cuda_kernels::Strided;
using cuda_kernels::strides_of;
using cuda_kernels::with_zero_at;

Tensor on_device(const Tensor& t, const Device& device) {
  return t.device() == device ? t : to_copy_across_devices(t, std::nullopt, device, false, std::nullopt);
}

Tensor contiguous_copy(const Tensor& self) {
  return to_copy_across_devices(self, std::nullopt, self.device(), false, MemoryFormat::Contiguous);
}

// --- index_put ---------------------------------------------------------------------------------

/// compute_offsets' contract (IndexUtils.h) as a CUDA kernel on `device`; indices on the CPU (a CPU
/// mask's nonzero() columns, or CPU index tensors, which torch accepts) are copied there first.
indexing::ComputeOffsets offsets_on(const Device& device) {
  return [device](Tensor& offsets, const Tensor& index_in, int64_t size, int64_t stride_bytes, IndexWrap wrap,
                  bool accumulate) -> std::optional<indexing::BadIndex> {
    KILN_INTERNAL_ASSERT(wrap == IndexWrap::Negative);
    const Tensor index = on_device(index_in, device);
    if (!accumulate) offsets = kiln::empty(index.sizes(), DType::Int64, device);
    long long n = index.numel();
    if (n == 0) return std::nullopt;
    const Tensor flag = cuda_kernels::bad_index_flag(device);
    auto ix = indexer_over<2>(index.sizes(), {Strided{offsets.data_ptr(), strides_of(offsets)},
                                              Strided{index.data_ptr(), strides_of(index)}},
                              8, index.itemsize(), 0);
    long long dim_size = size;
    long long stride = stride_bytes;
    int add = accumulate ? 1 : 0;
    void* bad = flag.data_ptr();
    cuda_kernels::launch_elementwise(cuda_kernels::index_offsets_kernel(index.dtype()), device_of(offsets), n,
                                     {&ix, &n, &dim_size, &stride, &add, &bad});
    const std::optional<int64_t> found = cuda_kernels::read_bad_index(flag);
    if (!found) return std::nullopt;
    return indexing::BadIndex{*found};
  };
}

/// self[indices] = values (accumulate: +=), in place: the CPU's plan and checks, CUDA's offsets and put.
Tensor index_put_in_place(const Tensor& self, OptionalTensorList indices, const Tensor& values, bool accumulate) {
  const auto ops = cuda_kernels::on_one_device({self, values}, "index_put_");
  cuda_kernels::check_kernel_dtype(self.dtype(), "index_put_");
  const Device device = self.device();
  cuda::DeviceGuard guard(device_of(self));
  const indexing::IndexPutPlan plan = indexing::plan_index_put(self, indices, ops[1], accumulate);
  const Tensor offsets = plan.info.offsets(offsets_on(device));  // every index checked before anything is written
  const IntArrayRef shape(plan.info.result_shape);
  long long n = 1;
  for (int64_t s : shape) n *= s;
  if (n > 0) {
    const Tensor dst = plan.info.restrided_self();
    const Tensor value = on_device(plan.value, device).expand(shape);
    auto ix = indexer_over<3>(shape, {Strided{dst.data_ptr(), strides_of(dst)},
                                      Strided{offsets.data_ptr(), strides_of(offsets)},
                                      Strided{value.data_ptr(), strides_of(value)}},
                              self.itemsize(), 8, self.itemsize());
    int add = accumulate ? 1 : 0;
    cuda_kernels::launch_elementwise(cuda_kernels::offset_put_kernel(self.dtype()), device_of(self), n,
                                     {&ix, &n, &add});
  }
  self.impl()->bump_version();
  return self;
}

Tensor index_put_cuda_(const Tensor& self, OptionalTensorList indices, const Tensor& values, bool accumulate) {
  return index_put_in_place(self, indices, values, accumulate);
}
Tensor index_put_cuda(const Tensor& self, OptionalTensorList indices, const Tensor& values, bool accumulate) {
  return index_put_in_place(contiguous_copy(self), indices, values, accumulate);
}

// --- scatter_reduce ----------------------------------------------------------------------------

/// scatter_reduce's put (ScatterReducePuts): target at (index along dim) op= src, or = value.
void put_along_dim(const Tensor& target_in, int64_t dim, const Tensor& index_in, const Tensor* src_in,
                   const std::optional<Scalar>& value, PutReduce reduce) {
  if (index_in.numel() == 0) return;
  const Tensor target = target_in.dim() == 0 ? target_in.view({1}) : target_in;
  const Tensor index = index_in.dim() == 0 ? index_in.view({1}) : index_in;
  Tensor src;
  Strided src_op{nullptr, {}};
  if (src_in == nullptr) {
    src = kiln::full({1}, *value, target.dtype(), target.device());
    src_op = Strided{src.data_ptr(), DimVector(static_cast<size_t>(index.dim()), 0)};
  } else {
    src = src_in->dim() == 0 ? src_in->view({1}) : *src_in;
    src_op = Strided{src.data_ptr(), strides_of(src)};
  }
  const DType dtype = target.dtype();
  long long n = index.numel();
  long long stride = target.stride(dim) * target.itemsize();
  long long size = target.size(dim);
  const Tensor flag = cuda_kernels::bad_index_flag(target.device());
  void* bad = flag.data_ptr();
  auto ix = indexer_over<3>(index.sizes(), {Strided{target.data_ptr(), with_zero_at(strides_of(target), dim)},
                                            Strided{index.data_ptr(), strides_of(index)}, src_op},
                            target.itemsize(), index.itemsize(), target.itemsize());
  const int device = device_of(target);
  if (reduce == PutReduce::Assign) {
    cuda_kernels::launch_elementwise(cuda_kernels::scatter_kernel(static_cast<int>(target.itemsize()), index.dtype()),
                                     device, n, {&ix, &n, &stride, &size, &bad});
  } else if (reduce == PutReduce::Add && cuda_kernels::has_atomic_add(dtype)) {
    double alpha = 1.0;
    cuda_kernels::launch_elementwise(cuda_kernels::scatter_add_kernel(dtype, index.dtype()), device, n,
                                     {&ix, &n, &stride, &size, &alpha, &bad});
  } else {
    const char* op = reduce == PutReduce::Add ? "sum" : reduce == PutReduce::Multiply ? "prod"
                                                       : reduce == PutReduce::Max    ? "amax"
                                                                                     : "amin";
    cuda_kernels::launch_elementwise(cuda_kernels::scatter_reduce_kernel(op, dtype, index.dtype()), device, n,
                                     {&ix, &n, &stride, &size, &bad});
  }
  const std::optional<int64_t> found = cuda_kernels::read_bad_index(flag);
  KILN_CHECK(!found, "index ", found.value_or(0), " is out of bounds for dimension ", dim, " with size ", size);
  target_in.impl()->bump_version();
}

/// target /= max(counts, 1), floor division for integers (scatter_reduce's mean).
void divide_by_counts(const Tensor& target, const Tensor& counts) {
  long long n = target.numel();
  if (n == 0) return;
  auto ix = indexer_over<2>(target.sizes(), {Strided{target.data_ptr(), strides_of(target)},
                                             Strided{counts.data_ptr(), strides_of(counts)}},
                            target.itemsize(), counts.itemsize(), 0);
  cuda_kernels::launch_elementwise(cuda_kernels::mean_divide_kernel(target.dtype()), device_of(target), n, {&ix, &n});
}

Tensor scatter_reduce_cuda(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                           std::string_view reduce, bool include_self) {
  const auto ops = cuda_kernels::on_one_device({self, index, src}, "scatter_reduce");
  cuda_kernels::check_kernel_dtype(self.dtype(), "scatter_reduce");
  cuda::DeviceGuard guard(device_of(ops[0]));
  const int64_t d = cuda_kernels::wrap(dim, self.dim());
  indexing::check_scatter_reduce(ops[0], d, ops[1], ops[2], reduce);
  const Tensor result = contiguous_copy(ops[0]);
  static const indexing::ScatterReducePuts cuda_puts{&put_along_dim, &divide_by_counts};
  indexing::scatter_reduce_into(result, d, ops[1], ops[2], reduce, include_self, cuda_puts, "cuda");
  return result;
}

}  // namespace

void register_cuda_put_kernels() {
  static Library* lib = new Library(Library::Kind::Impl, "kiln", DispatchKey::CUDA, __FILE__, __LINE__);
  lib->impl("index_put", &index_put_cuda);
  lib->impl("index_put_", &index_put_cuda_);
  lib->impl("scatter_reduce.two", &scatter_reduce_cuda);
}

}  // namespace kiln::native
