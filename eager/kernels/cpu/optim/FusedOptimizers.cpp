// The multi-tensor optimizer updates: one call updates every parameter of a
// group (Adam/AdamW, SGD with momentum), element-wise in a single pass per
// tensor, in parallel above the grain size. Math as PyTorch's optimizers.
#include <cmath>
#include <span>

#include "eager/core/Error.h"
#include "eager/kernels/OptimizerGroupChecks.h"
#include "eager/kernels/Parallel.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

namespace {


template <typename T>
void adam_one(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const Tensor* vmax, double lr,
              double beta1, double beta2, double weight_decay, double eps, bool maximize, int64_t step,
              bool decoupled) {
  T* p = param.data_ptr<T>();
  const T* g = grad.data_ptr<T>();
  T* mp = m.data_ptr<T>();
  T* vp = v.data_ptr<T>();
  T* vmaxp = vmax ? vmax->data_ptr<T>() : nullptr;
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bc2_sqrt = std::sqrt(1.0 - std::pow(beta2, static_cast<double>(step)));
  const T step_size = static_cast<T>(lr / bc1);
  const T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2), wd = static_cast<T>(weight_decay);
  const T decay = static_cast<T>(1.0 - lr * weight_decay);
  const T inv_bc2_sqrt = static_cast<T>(1.0 / bc2_sqrt), e = static_cast<T>(eps);
  parallel_for(0, param.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T gi = maximize ? -g[i] : g[i];
      if (decoupled) {
        p[i] *= decay;
      } else if (wd != T(0)) {
        gi += wd * p[i];
      }
      mp[i] += (gi - mp[i]) * (T(1) - b1);  // lerp, as PyTorch's foreach Adam
      vp[i] = vp[i] * b2 + (T(1) - b2) * gi * gi;
      T second = vp[i];
      if (vmaxp) {
        vmaxp[i] = std::max(vmaxp[i], vp[i]);
        second = vmaxp[i];
      }
      const T denom = std::sqrt(second) * inv_bc2_sqrt + e;
      p[i] -= step_size * mp[i] / denom;
    }
  });
}

template <typename T>
void sgd_one(const Tensor& param, const Tensor& grad, const Tensor* buf, double lr, double momentum, double dampening,
             double weight_decay, bool nesterov, bool maximize, bool first) {
  T* p = param.data_ptr<T>();
  const T* g = grad.data_ptr<T>();
  T* b = buf ? buf->data_ptr<T>() : nullptr;
  const T mu = static_cast<T>(momentum), damp = static_cast<T>(dampening), wd = static_cast<T>(weight_decay);
  const T rate = static_cast<T>(lr);
  parallel_for(0, param.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T d = maximize ? -g[i] : g[i];
      if (wd != T(0)) d += wd * p[i];
      if (b) {
        b[i] = first ? d : b[i] * mu + (T(1) - damp) * d;
        d = nesterov ? d + mu * b[i] : b[i];
      }
      p[i] -= rate * d;
    }
  });
}

}  // namespace

void fused_adam_cpu_(TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                     TensorList max_exp_avg_sqs, double lr, double beta1, double beta2, double weight_decay,
                     double eps, bool amsgrad, bool maximize, int64_t step, bool decoupled_weight_decay) {
  KILN_CHECK(step >= 1, "_fused_adam_: step must be at least 1, got ", step);
  KILN_CHECK(!amsgrad || max_exp_avg_sqs.size() == self.size(), "_fused_adam_: amsgrad needs max_exp_avg_sqs");
  check_optimizer_group("_fused_adam_", self, {{"grads", grads}, {"exp_avgs", exp_avgs}, {"exp_avg_sqs", exp_avg_sqs},
                                     {"max_exp_avg_sqs", amsgrad ? max_exp_avg_sqs : TensorList()}});
  if (!self.empty() && self[0].impl()->is_meta()) return;  // the checks above are the meta function
  for (size_t i = 0; i < self.size(); ++i) {
    const Tensor* vmax = amsgrad ? &max_exp_avg_sqs[i] : nullptr;
    if (self[i].dtype() == DType::Float32) {
      adam_one<float>(self[i], grads[i], exp_avgs[i], exp_avg_sqs[i], vmax, lr, beta1, beta2, weight_decay, eps,
                      maximize, step, decoupled_weight_decay);
    } else {
      adam_one<double>(self[i], grads[i], exp_avgs[i], exp_avg_sqs[i], vmax, lr, beta1, beta2, weight_decay, eps,
                       maximize, step, decoupled_weight_decay);
    }
    self[i].impl()->bump_version();
    exp_avgs[i].impl()->bump_version();
    exp_avg_sqs[i].impl()->bump_version();
  }
}

void fused_sgd_cpu_(TensorList self, TensorList grads, TensorList momentum_buffers, double lr, double momentum,
                    double dampening, double weight_decay, bool nesterov, bool maximize, bool is_first_step) {
  check_optimizer_group("_fused_sgd_", self, {{"grads", grads}, {"momentum_buffers", momentum_buffers}});
  if (!self.empty() && self[0].impl()->is_meta()) return;  // the checks above are the meta function
  for (size_t i = 0; i < self.size(); ++i) {
    const Tensor* buf = momentum_buffers.empty() ? nullptr : &momentum_buffers[i];
    if (self[i].dtype() == DType::Float32) {
      sgd_one<float>(self[i], grads[i], buf, lr, momentum, dampening, weight_decay, nesterov, maximize, is_first_step);
    } else {
      sgd_one<double>(self[i], grads[i], buf, lr, momentum, dampening, weight_decay, nesterov, maximize, is_first_step);
    }
    self[i].impl()->bump_version();
  }
}

}  // namespace kiln::native
