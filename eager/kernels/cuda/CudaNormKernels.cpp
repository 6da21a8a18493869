// The CUDA kernels of layer_norm and rms_norm, forward and backward
// (native_layer_norm, _fused_rms_norm, _norm_backward_input/_weight/_bias):
// every tensor made contiguous in the input's dtype and read as [rows, cols]
// rows, cols the normalized elements, as the CPU ops (Note [Norm statistics],
// eager/kernels/cpu/nn/NormOps.cpp): mean and rstd have the input's leading
// dims followed by ones, in the input dtype.
#include <limits>
#include <optional>
#include <sstream>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/dispatch/Library.h"
#include "eager/kernels/NormShape.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cuda/CudaKernels.h"
#include "eager/kernels/cuda/CudaLaunch.h"
#include "eager/kernels/cuda/NnKernelSources.h"

namespace kiln::native {

namespace {

using cuda_kernels::contiguous_as;
using cuda_kernels::device_of;


DimVector stats_shape(const Tensor& input, int64_t k) {
  DimVector shape(input.sizes());
  for (int64_t d = input.dim() - k; d < input.dim(); ++d) shape[static_cast<size_t>(d)] = 1;
  return shape;
}

/// The tensors of one op on one device (weight/bias/mean may be absent).
std::vector<Tensor> same_device(std::vector<Tensor> tensors, const char* op) {
  return cuda_kernels::on_one_device(tensors, op);
}

Tensor optional_as(const std::optional<Tensor>& t, DType dtype) {
  return t && t->defined() ? contiguous_as(*t, dtype) : Tensor();
}

const void* ptr_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

/// y, mean (layer_norm) and rstd; `mean` false for rms_norm.
std::vector<Tensor> norm_forward(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                                 const std::optional<Tensor>& bias, double eps, bool centered, const char* op) {
  const NormRows s = check_norm_arguments(input, normalized_shape, weight, bias);
  (void)same_device({input, weight.value_or(Tensor()), bias.value_or(Tensor())}, op);
  const DType dt = input.dtype();
  const int device = device_of(input);
  cuda::DeviceGuard guard(device);
  const Tensor x = contiguous_as(input, dt);
  const Tensor w = optional_as(weight, dt);
  const Tensor b = optional_as(bias, dt);
  Tensor y = kiln::empty(input.sizes(), dt, input.device());
  const DimVector st = stats_shape(input, static_cast<int64_t>(normalized_shape.size()));
  Tensor mean = centered ? kiln::empty(st, dt, input.device()) : Tensor();
  Tensor rstd = kiln::empty(st, dt, input.device());
  const void* xp = x.data_ptr();
  const void* wp = ptr_or_null(w);
  const void* bp = ptr_or_null(b);
  void* yp = y.data_ptr();
  void* mp = centered ? mean.data_ptr() : nullptr;
  void* rp = rstd.data_ptr();
  long long rows = s.rows;
  long long cols = s.cols;
  int rms = centered ? 0 : 1;
  cuda_kernels::launch_rows(cuda_kernels::norm_forward_kernel(dt), device, rows,
                            {&xp, &wp, &bp, &yp, &mp, &rp, &rows, &cols, &eps, &rms});
  return {y, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_cuda(const Tensor& input, IntArrayRef normalized_shape,
                                                           const std::optional<Tensor>& weight,
                                                           const std::optional<Tensor>& bias, double eps) {
  auto r = norm_forward(input, normalized_shape, weight, bias, eps, true, "native_layer_norm");
  return {r[0], r[1], r[2]};
}

std::tuple<Tensor, Tensor> fused_rms_norm_cuda(const Tensor& input, IntArrayRef normalized_shape,
                                               const std::optional<Tensor>& weight, std::optional<double> eps) {
  // eps None: the epsilon of the type the kernel computes in (float for float16/bfloat16), as torch.
  const double e = eps ? *eps : input.dtype() == DType::Float64 ? std::numeric_limits<double>::epsilon()
                                                                : double(std::numeric_limits<float>::epsilon());
  auto r = norm_forward(input, normalized_shape, weight, std::nullopt, e, false, "_fused_rms_norm");
  return {r[0], r[2]};
}

Tensor norm_backward_input_cuda(const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape,
                                const std::optional<Tensor>& mean, const Tensor& rstd,
                                const std::optional<Tensor>& weight) {
  const NormRows s = check_norm_arguments(input, normalized_shape, weight, std::nullopt);
  (void)same_device({grad_out, input, mean.value_or(Tensor()), rstd, weight.value_or(Tensor())}, "_norm_backward_input");
  const DType dt = input.dtype();
  const int device = device_of(input);
  cuda::DeviceGuard guard(device);
  const Tensor g = contiguous_as(grad_out, dt);
  const Tensor x = contiguous_as(input, dt);
  const Tensor m = optional_as(mean, dt);
  const Tensor r = contiguous_as(rstd, dt);
  const Tensor w = optional_as(weight, dt);
  Tensor dx = kiln::empty(input.sizes(), dt, input.device());
  if (s.rows == 0 || s.cols == 0) return dx;
  const void* gp = g.data_ptr();
  const void* xp = x.data_ptr();
  const void* mp = ptr_or_null(m);
  const void* rp = r.data_ptr();
  const void* wp = ptr_or_null(w);
  void* dp = dx.data_ptr();
  long long rows = s.rows;
  long long cols = s.cols;
  cuda_kernels::launch_rows(cuda_kernels::norm_backward_input_kernel(dt), device, rows,
                            {&gp, &xp, &mp, &rp, &wp, &dp, &rows, &cols});
  return dx;
}

/// Column sums over the rows of g (x undefined: the bias's gradient) or of g * xhat.
Tensor norm_backward_params(const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape,
                            const std::optional<Tensor>& mean, const Tensor& rstd, DType dt, NormRows s) {
  const int device = device_of(grad_out);
  cuda::DeviceGuard guard(device);
  const Tensor g = contiguous_as(grad_out, dt);
  const Tensor x = input.defined() ? contiguous_as(input, dt) : Tensor();
  const Tensor m = optional_as(mean, dt);
  const Tensor r = rstd.defined() ? contiguous_as(rstd, dt) : Tensor();
  Tensor out = kiln::zeros(normalized_shape, dt, grad_out.device());
  if (s.rows == 0 || s.cols == 0) return out;
  const void* gp = g.data_ptr();
  const void* xp = ptr_or_null(x);
  const void* mp = ptr_or_null(m);
  const void* rp = ptr_or_null(r);
  void* op = out.data_ptr();
  long long rows = s.rows;
  long long cols = s.cols;
  // A block per 32 columns (8 row slices of 32 threads): see kNormBackwardParams.
  cuda_kernels::launch_rows(cuda_kernels::norm_backward_params_kernel(dt), device, (s.cols + 31) / 32,
                            {&gp, &xp, &mp, &rp, &op, &rows, &cols});
  return out;
}

Tensor norm_backward_weight_cuda(const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape,
                                 const std::optional<Tensor>& mean, const Tensor& rstd) {
  const NormRows s = check_norm_arguments(input, normalized_shape, std::nullopt, std::nullopt);
  (void)same_device({grad_out, input, mean.value_or(Tensor()), rstd}, "_norm_backward_weight");
  return norm_backward_params(grad_out, input, normalized_shape, mean, rstd, input.dtype(), s);
}

Tensor norm_backward_bias_cuda(const Tensor& grad_out, IntArrayRef normalized_shape) {
  NormRows s;
  s.cols = 1;
  for (int64_t v : normalized_shape) s.cols *= v;
  s.rows = s.cols == 0 ? 0 : grad_out.numel() / s.cols;
  return norm_backward_params(grad_out, Tensor(), normalized_shape, std::nullopt, Tensor(), grad_out.dtype(), s);
}

}  // namespace

void register_cuda_norm_kernels() {
  static Library* lib = new Library(Library::Kind::Impl, "kiln", DispatchKey::CUDA, __FILE__, __LINE__);
  lib->impl("native_layer_norm", &native_layer_norm_cuda);
  lib->impl("_fused_rms_norm", &fused_rms_norm_cuda);
  lib->impl("_norm_backward_input", &norm_backward_input_cuda);
  lib->impl("_norm_backward_weight", &norm_backward_weight_cuda);
  lib->impl("_norm_backward_bias", &norm_backward_bias_cuda);
}

}  // namespace kiln::native
