// The CUDA fused optimizer updates: _fused_adam_ (Adam, AdamW) and _fused_sgd_
// (SGD with momentum), one kernel launch per parameter, with the CPU kernels'
// checks and math (eager/kernels/cpu/optim/FusedOptimizers.cpp).
#include <cmath>

#include "eager/core/Error.h"
#include "eager/kernels/OptimizerGroupChecks.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/dispatch/Library.h"
#include "eager/kernels/cuda/CudaKernels.h"
#include "eager/kernels/cuda/CudaLaunch.h"
#include "eager/kernels/cuda/OptimKernelSources.h"

namespace kiln::native {

namespace {

void check_group(const char* op, TensorList params, std::initializer_list<std::pair<const char*, TensorList>> lists) {
  for (size_t i = 0; i < params.size(); ++i) {
    KILN_CHECK(params[i].device().is_cuda(), op, ": expected all tensors to be on the same device, but parameter ", i,
               " is on ", params[i].device());
  }
  check_optimizer_group(op, params, lists);
}

void fused_adam_cuda_(TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                      TensorList max_exp_avg_sqs, double lr, double beta1, double beta2, double weight_decay,
                      double eps, bool amsgrad, bool maximize, int64_t step, bool decoupled_weight_decay) {
  KILN_CHECK(step >= 1, "_fused_adam_: step must be at least 1, got ", step);
  KILN_CHECK(!amsgrad || max_exp_avg_sqs.size() == self.size(), "_fused_adam_: amsgrad needs max_exp_avg_sqs");
  check_group("_fused_adam_", self, {{"grads", grads}, {"exp_avgs", exp_avgs}, {"exp_avg_sqs", exp_avg_sqs},
                                     {"max_exp_avg_sqs", amsgrad ? max_exp_avg_sqs : TensorList()}});
  // The per-step constants, computed in double on the host as the CPU kernel does.
  double step_size = lr / (1.0 - std::pow(beta1, static_cast<double>(step)));
  double inv_bc2_sqrt = 1.0 / std::sqrt(1.0 - std::pow(beta2, static_cast<double>(step)));
  double decay = 1.0 - lr * weight_decay;
  int max = maximize ? 1 : 0;
  int decoupled = decoupled_weight_decay ? 1 : 0;
  for (size_t i = 0; i < self.size(); ++i) {
    const int device = cuda_kernels::device_of(self[i]);
    cuda::DeviceGuard guard(device);
    void* p = self[i].data_ptr();
    const void* g = grads[i].data_ptr();
    void* m = exp_avgs[i].data_ptr();
    void* v = exp_avg_sqs[i].data_ptr();
    void* vmax = amsgrad ? max_exp_avg_sqs[i].data_ptr() : nullptr;
    long long n = self[i].numel();
    cuda_kernels::launch_elementwise(cuda_kernels::adam_kernel(self[i].dtype()), device, n,
                                     {&p, &g, &m, &v, &vmax, &n, &step_size, &beta1, &beta2, &weight_decay, &decay,
                                      &inv_bc2_sqrt, &eps, &max, &decoupled});
    self[i].impl()->bump_version();
    exp_avgs[i].impl()->bump_version();
    exp_avg_sqs[i].impl()->bump_version();
    if (amsgrad) max_exp_avg_sqs[i].impl()->bump_version();
  }
}

void fused_sgd_cuda_(TensorList self, TensorList grads, TensorList momentum_buffers, double lr, double momentum,
                     double dampening, double weight_decay, bool nesterov, bool maximize, bool is_first_step) {
  check_group("_fused_sgd_", self, {{"grads", grads}, {"momentum_buffers", momentum_buffers}});
  int nest = nesterov ? 1 : 0;
  int max = maximize ? 1 : 0;
  int first = is_first_step ? 1 : 0;
  for (size_t i = 0; i < self.size(); ++i) {
    const int device = cuda_kernels::device_of(self[i]);
    cuda::DeviceGuard guard(device);
    void* p = self[i].data_ptr();
    const void* g = grads[i].data_ptr();
    void* buf = momentum_buffers.empty() ? nullptr : momentum_buffers[i].data_ptr();
    long long n = self[i].numel();
    cuda_kernels::launch_elementwise(cuda_kernels::sgd_kernel(self[i].dtype()), device, n,
                                     {&p, &g, &buf, &n, &lr, &momentum, &dampening, &weight_decay, &nest, &max,
                                      &first});
    self[i].impl()->bump_version();
    if (!momentum_buffers.empty()) momentum_buffers[i].impl()->bump_version();
  }
}

}  // namespace

void register_cuda_optim_kernels() {
  static Library* lib = new Library(Library::Kind::Impl, "kiln", DispatchKey::CUDA, __FILE__, __LINE__);
  lib->impl("_fused_adam_", &fused_adam_cuda_);
  lib->impl("_fused_sgd_", &fused_sgd_cuda_);
}

}  // namespace kiln::native
