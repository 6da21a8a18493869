// The CUDA kernels of nll_loss_forward and nll_loss_backward on [N, C] (or [C])
// log-probabilities; nll_loss and cross_entropy_loss are composites over them
// (and log_softmax), as on the CPU. Checks and results as the CPU kernels'
// (Note [nll_loss reads only valid targets], eager/kernels/cpu/nn/LossNll.cpp);
// a bad target raises after the kernel (Note [Bad indices on CUDA]).
#include <optional>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/dispatch/Library.h"
#include "eager/kernels/NllLossShape.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cuda/CudaKernels.h"
#include "eager/kernels/cuda/CudaLaunch.h"
#include "eager/kernels/cuda/NnKernelSources.h"

namespace kiln::native {

namespace {

using cuda_kernels::contiguous_as;
using cuda_kernels::device_of;

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };


void raise_bad_target(const Tensor& flag) {
  if (const std::optional<int64_t> bad = cuda_kernels::read_bad_index(flag)) {
    KILN_FAIL(Index, "Target ", *bad, " is out of bounds.");
  }
}

std::tuple<Tensor, Tensor> nll_loss_forward_cuda(const Tensor& self, const Tensor& target,
                                                 const std::optional<Tensor>& weight, int64_t reduction,
                                                 int64_t ignore_index) {
  const NllShape s = check_nll_arguments(self, target, weight, reduction);
  const auto ops = cuda_kernels::on_one_device({self, target, weight.value_or(Tensor())}, "nll_loss_forward");
  const DType dt = self.dtype();
  const int device = device_of(self);
  cuda::DeviceGuard guard(device);
  const Tensor x = contiguous_as(ops[0], dt);
  const Tensor t = contiguous_as(ops[1], target.dtype());
  const Tensor w = ops[2].defined() ? contiguous_as(ops[2], dt) : Tensor();
  const bool per_element = reduction == kNone && s.batched;
  Tensor output = per_element ? kiln::empty({s.batch}, dt, self.device()) : kiln::empty({}, dt, self.device());
  Tensor total_weight = kiln::empty({}, dt, self.device());
  const Tensor flag = cuda_kernels::bad_index_flag(self.device());
  const void* xp = x.data_ptr();
  const void* tp = t.data_ptr();
  const void* wp = w.defined() ? w.data_ptr() : nullptr;
  void* op = output.data_ptr();
  void* twp = total_weight.data_ptr();
  void* bad = flag.data_ptr();
  long long batch = s.batch;
  long long classes = s.classes;
  long long ignore = ignore_index;
  int red = static_cast<int>(reduction);
  int per = per_element ? 1 : 0;
  // One block: the sums are a fixed tree (Note [Block sums are deterministic]).
  cuda_kernels::launch_rows(cuda_kernels::nll_loss_kernel(false, dt, target.dtype()), device, 1,
                            {&xp, &tp, &wp, &op, &twp, &batch, &classes, &ignore, &red, &per, &bad});
  raise_bad_target(flag);
  return {output, total_weight};
}

Tensor nll_loss_backward_cuda(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                              const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index,
                              const Tensor& total_weight) {
  const NllShape s = check_nll_arguments(self, target, weight, reduction);
  const bool per_element = reduction == kNone && s.batched;
  KILN_CHECK(per_element ? grad_output.numel() == s.batch : grad_output.numel() == 1,
             "nll_loss_backward: expected grad_output of ", per_element ? s.batch : 1, " elements but got ",
             grad_output.sizes());
  const auto ops = cuda_kernels::on_one_device({grad_output, self, target, weight.value_or(Tensor()), total_weight},
                                               "nll_loss_backward");
  const DType dt = self.dtype();
  const int device = device_of(self);
  cuda::DeviceGuard guard(device);
  const Tensor g = contiguous_as(ops[0], dt);
  const Tensor t = contiguous_as(ops[2], target.dtype());
  const Tensor w = ops[3].defined() ? contiguous_as(ops[3], dt) : Tensor();
  const Tensor tw = contiguous_as(ops[4], dt);
  Tensor grad_input = kiln::zeros(self.sizes(), dt, self.device());
  if (s.batch == 0) return grad_input;
  const Tensor flag = cuda_kernels::bad_index_flag(self.device());
  const void* gp = g.data_ptr();
  const void* tp = t.data_ptr();
  const void* wp = w.defined() ? w.data_ptr() : nullptr;
  const void* twp = tw.data_ptr();
  void* gi = grad_input.data_ptr();
  void* bad = flag.data_ptr();
  long long batch = s.batch;
  long long classes = s.classes;
  long long ignore = ignore_index;
  int red = static_cast<int>(reduction);
  int per = per_element ? 1 : 0;
  cuda_kernels::launch_elementwise(cuda_kernels::nll_loss_kernel(true, dt, target.dtype()), device, batch,
                                   {&gp, &tp, &wp, &twp, &gi, &batch, &classes, &ignore, &red, &per, &bad});
  raise_bad_target(flag);
  return grad_input;
}

}  // namespace

void register_cuda_loss_kernels() {
  static Library* lib = new Library(Library::Kind::Impl, "kiln", DispatchKey::CUDA, __FILE__, __LINE__);
  lib->impl("nll_loss_forward", &nll_loss_forward_cuda);
  lib->impl("nll_loss_backward", &nll_loss_backward_cuda);
}

}  // namespace kiln::native
