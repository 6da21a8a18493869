// The CUDA kernels of the reductions (sum, mean, prod, amax, amin, max, min)
// and of softmax / log_softmax (forward and backward): the reduced dims are moved last and made
// contiguous, so every kernel reads [rows, cols] rows (KernelSources.h).
#include <algorithm>
#include <optional>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/dispatch/Library.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cuda/CudaCopy.h"
#include "eager/kernels/cuda/CudaKernels.h"
#include "eager/kernels/cuda/CudaLaunch.h"
#include "eager/kernels/cuda/NnKernelSources.h"

namespace kiln::native {

namespace {

using cuda_kernels::device_of;

int64_t wrap_dim(int64_t dim, int64_t ndim) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  KILN_CHECK_INDEX(dim >= -n && dim < n, "Dimension out of range (expected to be in range of [", -n,
                   ", ", n - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

bool is_floating(DType d) { return category(d) == DTypeCategory::Floating; }

/// A contiguous copy of `t` in `dtype` with `dims` moved last (in order).
Tensor rows_of(const Tensor& t, const std::vector<int64_t>& kept, const std::vector<int64_t>& reduced, DType dtype) {
  std::vector<int64_t> perm = kept;
  perm.insert(perm.end(), reduced.begin(), reduced.end());
  const Tensor permuted = t.dim() == 0 ? t : t.permute(perm);
  return to_copy_across_devices(permuted, dtype, t.device(), false, MemoryFormat::Contiguous);
}

/// Reduces `self` over `dims` (all when empty) with `op` into `dtype`.
Tensor reduce(const Tensor& self, IntArrayRef dims, bool keepdim, const char* op, DType dtype, const char* api) {
  cuda_kernels::check_kernel_dtype(self.dtype(), api);
  const int64_t ndim = self.dim();
  std::vector<bool> is_reduced(static_cast<size_t>(ndim), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, ndim);
    if (ndim > 0) {
      KILN_CHECK(!is_reduced[static_cast<size_t>(w)] || dims.empty(), "dim ", w,
                 " appears multiple times in the list of dims");
      is_reduced[static_cast<size_t>(w)] = true;
    }
  }
  std::vector<int64_t> kept;
  std::vector<int64_t> reduced;
  DimVector out_shape;
  DimVector keep_shape;
  int64_t rows = 1;
  int64_t cols = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    const int64_t size = self.sizes()[static_cast<size_t>(d)];
    if (is_reduced[static_cast<size_t>(d)]) {
      reduced.push_back(d);
      cols *= size;
      keep_shape.push_back(1);
    } else {
      kept.push_back(d);
      rows *= size;
      out_shape.push_back(size);
      keep_shape.push_back(size);
    }
  }
  const std::string o = op;
  if ((o == "max" || o == "min") && cols == 0) {
    KILN_FAIL(Index, api, "(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction "
                          "dim with the 'dim' argument.");
  }
  const int device = device_of(self);
  cuda::DeviceGuard guard(device);
  const Tensor in = rows_of(self, kept, reduced, dtype);
  Tensor out = kiln::empty(out_shape, dtype, self.device());
  const void* in_ptr = in.data_ptr();
  void* out_ptr = out.data_ptr();
  long long r = rows;
  long long c = cols;
  cuda_kernels::launch_rows(cuda_kernels::reduce_kernel(op, dtype, dtype), device, rows,
                            {&in_ptr, &out_ptr, &r, &c});
  return keepdim ? out.view(keep_shape) : out;
}

/// sum and prod: integers and bool accumulate in int64, as torch's.
DType sum_dtype(const Tensor& self, std::optional<DType> dtype) {
  if (dtype) return *dtype;
  return is_floating(self.dtype()) ? self.dtype() : DType::Int64;
}

Tensor sum_cuda(const Tensor& self, std::optional<DType> dtype) {
  return reduce(self, {}, false, "sum", sum_dtype(self, dtype), "sum");
}
Tensor sum_dim_cuda(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype) {
  return reduce(self, dim.value_or(IntArrayRef{}), keepdim, "sum", sum_dtype(self, dtype), "sum");
}
Tensor prod_cuda(const Tensor& self, std::optional<DType> dtype) {
  return reduce(self, {}, false, "prod", sum_dtype(self, dtype), "prod");
}

DType mean_dtype(const Tensor& self, std::optional<DType> dtype) {
  const DType d = dtype.value_or(self.dtype());
  KILN_CHECK(is_floating(d), "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                             "complex dtype. Got: ", scalar_type_name(d));
  return d;
}
Tensor mean_cuda(const Tensor& self, std::optional<DType> dtype) {
  return reduce(self, {}, false, "mean", mean_dtype(self, dtype), "mean");
}
Tensor mean_dim_cuda(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype) {
  return reduce(self, dim.value_or(IntArrayRef{}), keepdim, "mean", mean_dtype(self, dtype), "mean");
}

Tensor amax_cuda(const Tensor& self, IntArrayRef dim, bool keepdim) {
  KILN_CHECK_NOT_IMPLEMENTED(self.dtype() != DType::Bool, "\"amax_cuda\" not implemented for 'Bool'");
  return reduce(self, dim, keepdim, "max", self.dtype(), "amax");
}
Tensor amin_cuda(const Tensor& self, IntArrayRef dim, bool keepdim) {
  KILN_CHECK_NOT_IMPLEMENTED(self.dtype() != DType::Bool, "\"amin_cuda\" not implemented for 'Bool'");
  return reduce(self, dim, keepdim, "min", self.dtype(), "amin");
}
Tensor max_cuda(const Tensor& self) {
  KILN_CHECK_NOT_IMPLEMENTED(self.dtype() != DType::Bool, "\"max_cuda\" not implemented for 'Bool'");
  return reduce(self, {}, false, "max", self.dtype(), "max");
}
Tensor min_cuda(const Tensor& self) {
  KILN_CHECK_NOT_IMPLEMENTED(self.dtype() != DType::Bool, "\"min_cuda\" not implemented for 'Bool'");
  return reduce(self, {}, false, "min", self.dtype(), "min");
}

Tensor softmax_impl(const Tensor& self, int64_t dim, DType dtype, bool log) {
  const char* api = log ? "log_softmax" : "softmax";
  KILN_CHECK_NOT_IMPLEMENTED(is_floating(dtype), "\"", api, "_cuda\" not implemented for '", scalar_type_name(dtype),
                             "'");
  const int64_t ndim = self.dim();
  const int64_t d = wrap_dim(dim, ndim);
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < ndim; ++i) {
    if (i != d) kept.push_back(i);
  }
  const std::vector<int64_t> reduced = ndim == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{d};
  const int device = device_of(self);
  cuda::DeviceGuard guard(device);
  const Tensor in = rows_of(self, kept, reduced, dtype);
  Tensor out = kiln::empty(in.sizes(), dtype, self.device());
  const int64_t cols = ndim == 0 ? 1 : self.sizes()[static_cast<size_t>(d)];
  const int64_t rows = cols == 0 ? 0 : self.numel() / cols;
  const void* in_ptr = in.data_ptr();
  void* out_ptr = out.data_ptr();
  long long r = rows;
  long long c = cols;
  cuda_kernels::launch_rows(cuda_kernels::softmax_kernel(log, dtype), device, rows, {&in_ptr, &out_ptr, &r, &c});
  if (ndim == 0 || d == ndim - 1) return out;
  // Back to self's dim order: out holds the dims as (kept..., d).
  std::vector<int64_t> inverse(static_cast<size_t>(ndim));
  for (int64_t i = 0; i < ndim - 1; ++i) inverse[static_cast<size_t>(kept[static_cast<size_t>(i)])] = i;
  inverse[static_cast<size_t>(d)] = ndim - 1;
  return to_copy_across_devices(out.permute(inverse), std::nullopt, self.device(), false, MemoryFormat::Contiguous);
}

/// _softmax_backward_data / _log_softmax_backward_data: from the forward's output, as the CPU ops.
Tensor softmax_backward_impl(const Tensor& grad_output, const Tensor& output, int64_t dim, DType input_dtype, bool log) {
  const char* op = log ? "_log_softmax_backward_data" : "_softmax_backward_data";
  KILN_CHECK(grad_output.sizes().size() == output.sizes().size() &&
                 std::equal(grad_output.sizes().begin(), grad_output.sizes().end(), output.sizes().begin()),
             op, ": grad_output of shape ", grad_output.sizes(), " does not match output of shape ", output.sizes());
  KILN_CHECK(grad_output.dtype() == output.dtype(), op, ": expected grad_output and output to have the same dtype, ",
             "but got ", scalar_type_name(grad_output.dtype()), " and ", scalar_type_name(output.dtype()));
  KILN_CHECK_NOT_IMPLEMENTED(is_floating(output.dtype()) && is_floating(input_dtype), "\"", op,
                             "\" not implemented for '", scalar_type_name(output.dtype()), "'");
  const auto ops = cuda_kernels::on_one_device({grad_output, output}, op);
  const DType dtype = output.dtype();
  const int64_t ndim = output.dim();
  const int64_t d = wrap_dim(dim, ndim);
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < ndim; ++i) {
    if (i != d) kept.push_back(i);
  }
  const std::vector<int64_t> reduced = ndim == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{d};
  const int device = device_of(output);
  cuda::DeviceGuard guard(device);
  const Tensor g = rows_of(ops[0], kept, reduced, dtype);
  const Tensor y = rows_of(ops[1], kept, reduced, dtype);
  Tensor dx = kiln::empty(y.sizes(), dtype, output.device());
  const int64_t cols = ndim == 0 ? 1 : output.sizes()[static_cast<size_t>(d)];
  const int64_t rows = cols == 0 ? 0 : output.numel() / cols;
  const void* g_ptr = g.data_ptr();
  const void* y_ptr = y.data_ptr();
  void* dx_ptr = dx.data_ptr();
  long long r = rows;
  long long c = cols;
  cuda_kernels::launch_rows(cuda_kernels::softmax_backward_kernel(log, dtype), device, rows,
                            {&g_ptr, &y_ptr, &dx_ptr, &r, &c});
  Tensor result = dx;
  if (ndim > 0 && d != ndim - 1) {
    std::vector<int64_t> inverse(static_cast<size_t>(ndim));
    for (int64_t i = 0; i < ndim - 1; ++i) inverse[static_cast<size_t>(kept[static_cast<size_t>(i)])] = i;
    inverse[static_cast<size_t>(d)] = ndim - 1;
    result = dx.permute(inverse);
  }
  return cuda_kernels::contiguous_as(result, input_dtype);
}

Tensor softmax_backward_data_cuda(const Tensor& grad_output, const Tensor& output, int64_t dim, DType input_dtype) {
  return softmax_backward_impl(grad_output, output, dim, input_dtype, false);
}
Tensor log_softmax_backward_data_cuda(const Tensor& grad_output, const Tensor& output, int64_t dim,
                                      DType input_dtype) {
  return softmax_backward_impl(grad_output, output, dim, input_dtype, true);
}

Tensor softmax_int_cuda(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return softmax_impl(self, dim, dtype.value_or(self.dtype()), false);
}
Tensor log_softmax_int_cuda(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return softmax_impl(self, dim, dtype.value_or(self.dtype()), true);
}
Tensor softmax_cuda(const Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_impl(self, dim, half_to_float ? DType::Float32 : self.dtype(), false);
}
Tensor log_softmax_cuda(const Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_impl(self, dim, half_to_float ? DType::Float32 : self.dtype(), true);
}

}  // namespace

void register_cuda_reduce_kernels() {
  static Library* lib = new Library(Library::Kind::Impl, "kiln", DispatchKey::CUDA, __FILE__, __LINE__);
  lib->impl("sum", &sum_cuda);
  lib->impl("sum.dim_IntList", &sum_dim_cuda);
  lib->impl("prod", &prod_cuda);
  lib->impl("mean", &mean_cuda);
  lib->impl("mean.dim", &mean_dim_cuda);
  lib->impl("amax", &amax_cuda);
  lib->impl("amin", &amin_cuda);
  lib->impl("max", &max_cuda);
  lib->impl("min", &min_cuda);
  lib->impl("softmax.int", &softmax_int_cuda);
  lib->impl("log_softmax.int", &log_softmax_int_cuda);
  lib->impl("_softmax", &softmax_cuda);
  lib->impl("_log_softmax", &log_softmax_cuda);
  lib->impl("_softmax_backward_data", &softmax_backward_data_cuda);
  lib->impl("_log_softmax_backward_data", &log_softmax_backward_data_cuda);
}

}  // namespace kiln::native
