// The CUDA kernels of the indexing ops: index_select, embedding and its dense
// backward, gather, scatter / scatter_ (src and value), scatter_add(_),
// index_add(_), masked_fill(_). (index_put and scatter_reduce: CudaPutKernels.cpp.)
// Checks and messages as the CPU kernels' (eager/kernels/cpu/indexing); a bad
// index raises after the kernel (Note [Bad indices on CUDA], CudaLaunch.h).
#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <optional>
#include <vector>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/dispatch/Library.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cuda/CudaCopy.h"
#include "eager/kernels/cuda/CudaKernels.h"
#include "eager/kernels/cuda/CudaIndexOperands.h"
#include "eager/kernels/cuda/CudaLaunch.h"
#include "eager/kernels/cuda/IndexKernelSources.h"
#include "eager/kernels/cuda/NnKernelSources.h"

namespace kiln::native {

namespace {

using cuda_kernels::contiguous_as;
using cuda_kernels::device_of;
using cuda_kernels::IndexerParam;
using cuda_kernels::index_along;
using cuda_kernels::indexer_over;
using cuda_kernels::is_index_dtype;
using cuda_kernels::Strided;
using cuda_kernels::strides_of;
using cuda_kernels::with_zero_at;
using cuda_kernels::wrap;

// Note [Indexing through a restrided operand]
// -------------------------------------------
// Every indexing kernel here is a grid-stride loop over one iteration shape S
// (the index's for gather/scatter, the result's for index_select, the
// source's for index_add) with three strided operands: the side written or
// read element by element, the index, and the "indexed" side, described with
// its own strides over S except along `dim`, where its stride is 0. The kernel
// reads the index k at position i and moves the element at the indexed side's
// position i plus k * (its real stride along dim). index_select's 1-D index
// becomes an operand over S with stride 0 on every dim but `dim`, so gather,
// index_select and embedding share one template, and scatter, scatter_add,
// index_add and index_put share two (assign, add). No operand is copied to
// make it contiguous: views and expanded tensors are read where they are.

/// Runs the gather template: out (sizes S) from `indexed` through `index`. The bad index, if any.
std::optional<int64_t> run_gather(const Tensor& out, const Strided& index, DType index_dtype, const Strided& indexed,
                                  int64_t dim_stride, int64_t dim_size) {
  long long n = out.numel();
  if (n == 0) return std::nullopt;
  const int device = device_of(out);
  const Tensor flag = cuda_kernels::bad_index_flag(out.device());
  const int64_t item = out.itemsize();
  auto ix = indexer_over<3>(out.sizes(), {Strided{out.data_ptr(), strides_of(out)}, index, indexed}, item,
                            itemsize(index_dtype), item);
  long long stride = dim_stride * item;
  long long size = dim_size;
  void* bad = flag.data_ptr();
  cuda_kernels::launch_elementwise(cuda_kernels::gather_kernel(static_cast<int>(item), index_dtype), device, n,
                                   {&ix, &n, &stride, &size, &bad});
  return cuda_kernels::read_bad_index(flag);
}

/// Runs the scatter template over `sizes`: dst (stride 0 along dim) at index from src; adds
/// alpha * src with atomics when `add`.
std::optional<int64_t> run_scatter(const Tensor& dst, IntArrayRef sizes, const Strided& dst_op, const Strided& index,
                                   DType index_dtype, const Strided& src, int64_t dim_stride, int64_t dim_size, bool add,
                                   double alpha) {
  long long n = 1;
  for (int64_t s : sizes) n *= s;
  if (n == 0) return std::nullopt;
  const int device = device_of(dst);
  const Tensor flag = cuda_kernels::bad_index_flag(dst.device());
  const int64_t item = dst.itemsize();
  auto ix = indexer_over<3>(sizes, {dst_op, index, src}, item, itemsize(index_dtype), item);
  long long stride = dim_stride * item;
  long long size = dim_size;
  void* bad = flag.data_ptr();
  if (add) {
    KILN_CHECK_NOT_IMPLEMENTED(cuda_kernels::has_atomic_add(dst.dtype()), "\"scatter_add_cuda\" not implemented for '",
                               scalar_type_name(dst.dtype()), "'");
    cuda_kernels::launch_elementwise(cuda_kernels::scatter_add_kernel(dst.dtype(), index_dtype), device, n,
                                     {&ix, &n, &stride, &size, &alpha, &bad});
  } else {
    cuda_kernels::launch_elementwise(cuda_kernels::scatter_kernel(static_cast<int>(item), index_dtype), device, n,
                                     {&ix, &n, &stride, &size, &bad});
  }
  return cuda_kernels::read_bad_index(flag);
}

Tensor copy_of(const Tensor& self) {
  return to_copy_across_devices(self, std::nullopt, self.device(), false, MemoryFormat::Contiguous);
}

// --- index_select, embedding -----------------------------------------------------------

Tensor index_select_cuda(const Tensor& self_in, int64_t dim, const Tensor& index_in) {
  KILN_CHECK_INDEX(index_in.dim() <= 1, "index_select(): Index is supposed to be a vector");
  KILN_CHECK(is_index_dtype(index_in.dtype()), "index_select(): Expected dtype int32 or int64 for index");
  const auto ops = cuda_kernels::on_one_device({self_in, index_in}, "index_select");
  cuda_kernels::check_kernel_dtype(self_in.dtype(), "index_select");
  cuda::DeviceGuard guard(device_of(self_in));
  const bool scalar = self_in.dim() == 0;
  const Tensor self = scalar ? ops[0].view({1}) : ops[0];
  const Tensor index = index_in.dim() == 0 ? ops[1].view({1}) : ops[1];
  const int64_t d = wrap(dim, self.dim());
  const int64_t size = self.size(d);
  KILN_CHECK_INDEX(size > 0 || index.numel() == 0, "index_select(): self indexing axis dim should be positive");
  DimVector shape(self.sizes());
  shape[static_cast<size_t>(d)] = index.numel();
  Tensor out = kiln::empty(shape, self.dtype(), self.device());
  const std::optional<int64_t> bad =
      run_gather(out, Strided{index.data_ptr(), index_along(self.dim(), d, index.stride(0))}, index.dtype(),
                 Strided{self.data_ptr(), with_zero_at(strides_of(self), d)}, self.stride(d), size);
  KILN_CHECK_INDEX(!bad, "index_select(): index ", bad.value_or(0), " out of range for self tensor of size ",
                   self.sizes(), " at dimension ", d);
  return scalar && index_in.dim() == 0 ? out.view(IntArrayRef{}) : out;
}

Tensor embedding_cuda(const Tensor& weight, const Tensor& indices, int64_t /*padding_idx*/,
                      bool /*scale_grad_by_freq*/, bool /*sparse*/) {
  KILN_CHECK(weight.dim() == 2, "'weight' must be 2-D");
  KILN_CHECK(is_index_dtype(indices.dtype()),
             "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got ",
             legacy_tensor_name(indices.dtype()), " instead (while checking arguments for embedding)");
  const auto ops = cuda_kernels::on_one_device({weight, indices}, "embedding");
  cuda::DeviceGuard guard(device_of(weight));
  const Tensor flat = contiguous_as(ops[1], indices.dtype()).view({indices.numel()});
  Tensor out = kiln::empty({indices.numel(), weight.size(1)}, weight.dtype(), weight.device());
  const std::optional<int64_t> bad =
      run_gather(out, Strided{flat.data_ptr(), index_along(2, 0, 1)}, indices.dtype(),
                 Strided{ops[0].data_ptr(), with_zero_at(strides_of(ops[0]), 0)}, ops[0].stride(0), weight.size(0));
  KILN_CHECK_INDEX(!bad, "index out of range in self");
  DimVector shape(indices.sizes());
  shape.push_back(weight.size(1));
  return out.view(shape);
}

Tensor embedding_dense_backward_cuda(const Tensor& grad_output, const Tensor& indices, IntArrayRef weight_sizes,
                                     int64_t padding_idx, bool scale_grad_by_freq) {
  KILN_CHECK(weight_sizes.size() == 2, "_embedding_dense_backward: weight_sizes must have 2 elements");
  KILN_CHECK(is_index_dtype(indices.dtype()),
             "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got ",
             legacy_tensor_name(indices.dtype()), " instead (while checking arguments for embedding_backward)");
  KILN_CHECK_NOT_IMPLEMENTED(is_floating_point(grad_output.dtype()), "\"embedding_backward\" not implemented for '",
                             scalar_type_name(grad_output.dtype()), "'");
  const int64_t rows = weight_sizes[0];
  const int64_t dim = weight_sizes[1];
  const int64_t n = indices.numel();
  KILN_CHECK(grad_output.numel() == n * dim, "embedding_backward: grad_output of shape ", grad_output.sizes(),
             " does not match indices of shape ", indices.sizes(), " and embedding dim ", dim);
  const Device device = grad_output.device();
  const int dev = device_of(grad_output);
  cuda::DeviceGuard guard(dev);
  // Note [Deterministic embedding backward] (NnKernelSources.cpp): segments built on the host.
  const Tensor host = to_copy_across_devices(indices, DType::Int64, Device(DeviceType::CPU), false,
                                             MemoryFormat::Contiguous);
  const int64_t* idx = host.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) KILN_CHECK_INDEX(idx[i] >= 0 && idx[i] < rows, "index out of range in self");
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return idx[a] < idx[b]; });
  std::vector<int64_t> starts;
  std::vector<int64_t> seg_rows;
  std::vector<int64_t> kept;
  kept.reserve(order.size());
  for (int64_t p : order) {
    const int64_t r = idx[p];
    if (r == padding_idx) continue;
    if (seg_rows.empty() || seg_rows.back() != r) {
      starts.push_back(static_cast<int64_t>(kept.size()));
      seg_rows.push_back(r);
    }
    kept.push_back(p);
  }
  starts.push_back(static_cast<int64_t>(kept.size()));
  Tensor grad_weight = kiln::zeros(weight_sizes, grad_output.dtype(), device);
  if (seg_rows.empty() || dim == 0) return grad_weight;
  auto upload = [&](const std::vector<int64_t>& v) {
    Tensor t = kiln::empty({static_cast<int64_t>(v.size())}, DType::Int64, Device(DeviceType::CPU));
    std::memcpy(t.data_ptr(), v.data(), v.size() * sizeof(int64_t));
    return to_copy_across_devices(t, std::nullopt, device, false, std::nullopt);
  };
  const Tensor order_d = upload(kept);
  const Tensor starts_d = upload(starts);
  const Tensor rows_d = upload(seg_rows);
  const Tensor g = contiguous_as(grad_output, grad_output.dtype());
  const void* gp = g.data_ptr();
  const void* op = order_d.data_ptr();
  const void* sp = starts_d.data_ptr();
  const void* rp = rows_d.data_ptr();
  void* wp = grad_weight.data_ptr();
  long long segments = static_cast<long long>(seg_rows.size());
  long long d = dim;
  int by_freq = scale_grad_by_freq ? 1 : 0;
  cuda_kernels::launch_rows(cuda_kernels::embedding_backward_kernel(grad_output.dtype()), dev, segments,
                            {&gp, &op, &sp, &rp, &wp, &segments, &d, &by_freq});
  // The host vectors die here; the copies above waited for their uploads (pageable memory).
  return grad_weight;
}

// --- gather, scatter, scatter_add ---------------------------------------------------------

void check_gather_shapes(const Tensor& self, int64_t dim, const Tensor& index, const char* op) {
  KILN_CHECK(index.numel() == 0 || is_index_dtype(index.dtype()), op,
             "(): Expected dtype int32/int64 for index");
  KILN_CHECK(std::max<int64_t>(self.dim(), 1) == std::max<int64_t>(index.dim(), 1),
             "Index tensor must have the same number of dimensions as input tensor");
  for (int64_t d = 0; d < index.dim(); ++d) {
    if (d == dim) continue;
    KILN_CHECK(index.size(d) <= self.size(d), "Size does not match at dimension ", d, " expected index ",
               index.sizes(), " to be no larger than self ", self.sizes(), " apart from dimension ", dim);
  }
}

Tensor gather_cuda(const Tensor& self_in, int64_t dim, const Tensor& index_in, bool /*sparse_grad*/) {
  const auto ops = cuda_kernels::on_one_device({self_in, index_in}, "gather");
  cuda_kernels::check_kernel_dtype(self_in.dtype(), "gather");
  cuda::DeviceGuard guard(device_of(self_in));
  const Tensor self = self_in.dim() == 0 ? ops[0].view({1}) : ops[0];
  const Tensor index = index_in.dim() == 0 ? ops[1].view({1}) : ops[1];
  const int64_t d = wrap(dim, self.dim());
  check_gather_shapes(self, d, index, "gather");
  Tensor out = kiln::empty(index.sizes(), self.dtype(), self.device());
  const std::optional<int64_t> bad = run_gather(out, Strided{index.data_ptr(), strides_of(index)}, index.dtype(),
                                                Strided{self.data_ptr(), with_zero_at(strides_of(self), d)},
                                                self.stride(d), self.size(d));
  KILN_CHECK(!bad, "index ", bad.value_or(0), " is out of bounds for dimension ", d, " with size ", self.size(d));
  return index_in.dim() == 0 ? out.view(IntArrayRef{}) : out;
}

/// self[... index ...] = src (add: += src) in place; src undefined: `value` everywhere.
Tensor scatter_in_place(const Tensor& self_in, int64_t dim, const Tensor& index_in, const Tensor& src_in,
                               const Scalar* value, bool add, const char* op) {
  const auto ops = cuda_kernels::on_one_device({self_in, index_in, src_in}, op);
  cuda_kernels::check_kernel_dtype(self_in.dtype(), op);
  cuda::DeviceGuard guard(device_of(self_in));
  const Tensor self = self_in.dim() == 0 ? ops[0].view({1}) : ops[0];
  const Tensor index = index_in.dim() == 0 ? ops[1].view({1}) : ops[1];
  const int64_t d = wrap(dim, self.dim());
  check_gather_shapes(self, d, index, op);
  Tensor src;
  Strided src_op{nullptr, {}};
  if (value != nullptr) {
    src = kiln::empty({1}, self.dtype(), self.device());
    cuda_fill(src, *value);
    src_op = Strided{src.data_ptr(), DimVector(static_cast<size_t>(index.dim()), 0)};
  } else {
    KILN_CHECK(self.dtype() == src_in.dtype(), op, "(): Expected self.dtype to be equal to src.dtype");
    src = src_in.dim() == 0 ? ops[2].view({1}) : ops[2];
    for (int64_t i = 0; i < index.dim(); ++i) {
      KILN_CHECK(index.size(i) <= src.size(i), "Expected index ", index.sizes(), " to be no larger than src ",
                 src.sizes());
    }
    src_op = Strided{src.data_ptr(), strides_of(src)};
  }
  const std::optional<int64_t> bad =
      run_scatter(self, index.sizes(), Strided{self.data_ptr(), with_zero_at(strides_of(self), d)},
                  Strided{index.data_ptr(), strides_of(index)}, index.dtype(), src_op, self.stride(d), self.size(d), add,
                  1.0);
  KILN_CHECK(!bad, "index ", bad.value_or(0), " is out of bounds for dimension ", d, " with size ", self.size(d));
  self_in.impl()->bump_version();
  return self_in;
}

Tensor scatter_src_cuda_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_in_place(self, dim, index, src, nullptr, false, "scatter");
}
Tensor scatter_value_cuda_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return scatter_in_place(self, dim, index, Tensor(), &value, false, "scatter");
}
Tensor scatter_add_cuda_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_in_place(self, dim, index, src, nullptr, true, "scatter_add");
}
Tensor scatter_src_cuda(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_in_place(copy_of(self), dim, index, src, nullptr, false, "scatter");
}
Tensor scatter_value_cuda(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return scatter_in_place(copy_of(self), dim, index, Tensor(), &value, false, "scatter");
}
Tensor scatter_add_cuda(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_in_place(copy_of(self), dim, index, src, nullptr, true, "scatter_add");
}

// --- index_add ------------------------------------------------------------------------------

/// self[..., index[j], ...] (+)= alpha * source[..., j, ...] along dim, in place.
Tensor index_into_dim(const Tensor& self_in, int64_t dim, const Tensor& index_in, const Tensor& source_in,
                             double alpha, bool add, const char* op) {
  const auto ops = cuda_kernels::on_one_device({self_in, index_in, source_in}, op);
  cuda_kernels::check_kernel_dtype(self_in.dtype(), op);
  cuda::DeviceGuard guard(device_of(self_in));
  const Tensor self = self_in.dim() == 0 ? ops[0].view({1}) : ops[0];
  const Tensor index = index_in.dim() == 0 ? ops[1].view({1}) : ops[1];
  const Tensor source = source_in.dim() == 0 ? ops[2].view({1}) : ops[2];
  const int64_t d = wrap(dim, self.dim());
  const Strided dst_op{self.data_ptr(), with_zero_at(strides_of(self), d)};
  const std::optional<int64_t> bad =
      run_scatter(self, source.sizes(), dst_op, Strided{index.data_ptr(), index_along(source.dim(), d, index.stride(0))},
                  index.dtype(), Strided{source.data_ptr(), strides_of(source)}, self.stride(d), self.size(d), add,
                  alpha);
  KILN_CHECK_INDEX(!bad, op, "(): index ", bad.value_or(0), " is out of bounds for dimension ", d, " with size ",
                   self.size(d));
  self_in.impl()->bump_version();
  return self_in;
}

void check_index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  KILN_CHECK_INDEX(index.dim() <= 1, "index_add_(): Index is supposed to be a vector, but got dim: ", index.dim(),
                   " with type: ", scalar_type_name(index.dtype()), " and size: ", index.sizes());
  KILN_CHECK(is_index_dtype(index.dtype()), "index_add_(): Expected dtype int32/int64 for index but got: ",
             scalar_type_name(index.dtype()));
  KILN_CHECK(self.dtype() == source.dtype(), "index_add_(): self (", scalar_type_name(self.dtype()),
             ") and source (", scalar_type_name(source.dtype()), ") must have the same scalar type");
  const int64_t d = wrap(dim, self.dim());
  KILN_CHECK(std::max<int64_t>(self.dim(), 1) == std::max<int64_t>(source.dim(), 1),
             "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = ",
             self.sizes(), " source.shape = ", source.sizes());
  const int64_t source_size = source.dim() == 0 ? 1 : source.size(d);
  KILN_CHECK(index.numel() == source_size, "index_add_(): Number of indices (", index.numel(),
             ") should be equal to source.size(dim): (", source_size, "), for dim: ", d);
  for (int64_t i = 0; i < self.dim(); ++i) {
    KILN_CHECK(i == d || self.size(i) == source.size(i),
               "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = ",
               self.sizes(), " source.shape = ", source.sizes());
  }
}

Tensor index_add_cuda_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                       const Scalar& alpha) {
  check_index_add(self, dim, index, source);
  return index_into_dim(self, dim, index, source, alpha.to_double(), true, "index_add_");
}
Tensor index_add_cuda(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                      const Scalar& alpha) {
  check_index_add(self, dim, index, source);
  return index_into_dim(copy_of(self), dim, index, source, alpha.to_double(), true, "index_add");
}

// --- masked_fill ------------------------------------------------------------------------------

/// self[mask] = the value whose bytes (in self's dtype) are `bits`; mask broadcasts to self.
Tensor masked_fill_bits(const Tensor& self, const Tensor& mask_in, long long bits) {
  KILN_CHECK(mask_in.dtype() == DType::Bool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
             scalar_type_name(mask_in.dtype()));
  const auto ops = cuda_kernels::on_one_device({self, mask_in}, "masked_fill_");
  cuda::DeviceGuard guard(device_of(self));
  const Tensor mask = ops[1].expand(self.sizes());
  long long n = self.numel();
  if (n == 0) return self;
  auto ix = indexer_over<2>(self.sizes(), {Strided{self.data_ptr(), strides_of(self)},
                                           Strided{mask.data_ptr(), strides_of(mask)}},
                            self.itemsize(), 1, 0);
  cuda_kernels::launch_elementwise(cuda_kernels::masked_fill_kernel(static_cast<int>(self.itemsize())),
                                   device_of(self), n, {&ix, &n, &bits});
  self.impl()->bump_version();
  return self;
}

/// The bytes of the 0-dim `value` as self's dtype (a copy to the host, which waits for it).
long long value_bits(const Tensor& self, const Tensor& value) {
  KILN_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
             value.dim(), " dimension(s).");
  const Tensor host = to_copy_across_devices(value, self.dtype(), Device(DeviceType::CPU), false, std::nullopt);
  long long bits = 0;
  std::memcpy(&bits, host.data_ptr(), static_cast<size_t>(host.itemsize()));
  return bits;
}

/// The bytes of `value` converted to self's dtype (as fill_ converts), computed on the host.
long long scalar_bits(const Tensor& self, const Scalar& value) {
  cuda_kernels::check_kernel_dtype(self.dtype(), "masked_fill");
  long long bits = 0;
  visit_dtype(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = checked_scalar_to<T>(value);
    std::memcpy(&bits, &v, sizeof(T));
  });
  return bits;
}

Tensor masked_fill_scalar_cuda_(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return masked_fill_bits(self, mask, scalar_bits(self, value));
}
Tensor masked_fill_tensor_cuda_(const Tensor& self, const Tensor& mask, const Tensor& value) {
  return masked_fill_bits(self, mask, value_bits(self, value));
}
Tensor masked_fill_scalar_cuda(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return masked_fill_bits(copy_of(self), mask, scalar_bits(self, value));
}
Tensor masked_fill_tensor_cuda(const Tensor& self, const Tensor& mask, const Tensor& value) {
  return masked_fill_bits(copy_of(self), mask, value_bits(self, value));
}

}  // namespace

void register_cuda_index_kernels() {
  static Library* lib = new Library(Library::Kind::Impl, "kiln", DispatchKey::CUDA, __FILE__, __LINE__);
  lib->impl("index_select", &index_select_cuda);
  lib->impl("embedding", &embedding_cuda);
  lib->impl("_embedding_dense_backward", &embedding_dense_backward_cuda);
  lib->impl("gather", &gather_cuda);
  lib->impl("scatter.src", &scatter_src_cuda);
  lib->impl("scatter.value", &scatter_value_cuda);
  lib->impl("scatter_.src", &scatter_src_cuda_);
  lib->impl("scatter_.value", &scatter_value_cuda_);
  lib->impl("scatter_add", &scatter_add_cuda);
  lib->impl("scatter_add_", &scatter_add_cuda_);
  lib->impl("index_add", &index_add_cuda);
  lib->impl("index_add_", &index_add_cuda_);
  lib->impl("masked_fill.Scalar", &masked_fill_scalar_cuda);
  lib->impl("masked_fill.Tensor", &masked_fill_tensor_cuda);
  lib->impl("masked_fill_.Scalar", &masked_fill_scalar_cuda_);
  lib->impl("masked_fill_.Tensor", &masked_fill_tensor_cuda_);
}

}  // namespace kiln::native
