// register_cuda_kernels(): every part once, plus the view kernels.
#include <mutex>

#include "eager/dispatch/Dispatcher.h"
#include "eager/kernels/cuda/CudaKernels.h"

namespace kiln::native {

namespace {

/// A view only rewrites sizes, strides and offset, so the CPU kernel of every
/// op tagged `view` serves CUDA tensors as it is.
void register_cuda_view_kernels() {
  Dispatcher& d = Dispatcher::singleton();
  for (const OperatorHandle& op : d.all_ops()) {
    const OperatorEntry& entry = op.entry();
    if (!entry.has_tag("view") || !entry.has_kernel_for(DispatchKey::CPU) || entry.has_kernel_for(DispatchKey::CUDA)) {
      continue;
    }
    d.register_impl(op.name(), DispatchKey::CUDA, entry.lookup(DispatchKey::CPU));
  }
}

}  // namespace

void register_cuda_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_cuda_view_kernels();
    register_cuda_factory_kernels();
    register_cuda_pointwise_kernels();
    register_cuda_reduce_kernels();
    register_cuda_blas_kernels();
    register_cuda_norm_kernels();
    register_cuda_loss_kernels();
    register_cuda_index_kernels();
    register_cuda_put_kernels();
    register_cuda_random_kernels();
    register_cuda_optim_kernels();
    register_cuda_shape_kernels();
  });
}

}  // namespace kiln::native
