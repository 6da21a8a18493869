// The CUDA C++ templates of the fused optimizer updates (OptimKernelSources.h).
#include "eager/kernels/cuda/OptimKernelSources.h"

#include "eager/core/Error.h"

namespace kiln::native::cuda_kernels {

namespace {

const char* kAdam = R"CUDA(
extern "C" __global__ void $NAME($T* p, const $T* g, $T* m, $T* v, $T* vmax, long long n, double step_size_value,
                                 double beta1, double beta2, double weight_decay, double decay_value,
                                 double inv_bc2_sqrt_value, double eps, int maximize, int decoupled) {
  using T = $T;
  const T step_size = static_cast<T>(step_size_value);
  const T b1 = static_cast<T>(beta1);
  const T b2 = static_cast<T>(beta2);
  const T wd = static_cast<T>(weight_decay);
  const T decay = static_cast<T>(decay_value);
  const T inv_bc2_sqrt = static_cast<T>(inv_bc2_sqrt_value);
  const T e = static_cast<T>(eps);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    T gi = maximize ? -g[i] : g[i];
    T pi = p[i];
    if (decoupled) {
      pi *= decay;
    } else if (wd != T(0)) {
      gi += wd * pi;
    }
    const T mi = m[i] + (gi - m[i]) * (T(1) - b1);
    const T vi = v[i] * b2 + (T(1) - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    T second = vi;
    if (vmax) {
      const T vm = vmax[i] < vi ? vi : vmax[i];
      vmax[i] = vm;
      second = vm;
    }
    const T denom = sqrt(second) * inv_bc2_sqrt + e;
    p[i] = pi - step_size * mi / denom;
  }
}
)CUDA";

const char* kSgd = R"CUDA(
extern "C" __global__ void $NAME($T* p, const $T* g, $T* buf, long long n, double lr, double momentum,
                                 double dampening, double weight_decay, int nesterov, int maximize, int first) {
  using T = $T;
  const T mu = static_cast<T>(momentum);
  const T damp = static_cast<T>(dampening);
  const T wd = static_cast<T>(weight_decay);
  const T rate = static_cast<T>(lr);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    T d = maximize ? -g[i] : g[i];
    if (wd != T(0)) d += wd * p[i];
    if (buf) {
      const T b = first ? d : buf[i] * mu + (T(1) - damp) * d;
      buf[i] = b;
      d = nesterov ? d + mu * b : b;
    }
    p[i] -= rate * d;
  }
}
)CUDA";

void check_dtype(DType dtype) {
  KILN_CHECK(dtype == DType::Float32 || dtype == DType::Float64, "no CUDA optimizer template for ",
             scalar_type_name(dtype));
}

}  // namespace

KernelInstance adam_kernel(DType dtype) {
  check_dtype(dtype);
  const std::string name = std::string("kiln_adam_") + template_tag(dtype);
  return {name, fill_template(kAdam, {{"NAME", name}, {"T", template_cuda_type(dtype)}})};
}

KernelInstance sgd_kernel(DType dtype) {
  check_dtype(dtype);
  const std::string name = std::string("kiln_sgd_") + template_tag(dtype);
  return {name, fill_template(kSgd, {{"NAME", name}, {"T", template_cuda_type(dtype)}})};
}

void append_optim_kernel_instances(std::vector<std::pair<std::string, std::vector<KernelInstance>>>& families) {
  std::vector<KernelInstance> optim;
  for (DType d : {DType::Float32, DType::Float64}) {
    optim.push_back(adam_kernel(d));
    optim.push_back(sgd_kernel(d));
  }
  families.emplace_back("optim", std::move(optim));
}

}  // namespace kiln::native::cuda_kernels
