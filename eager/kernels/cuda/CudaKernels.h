// The eager CUDA kernels' registration with the dispatcher (the CUDA key).
#pragma once

namespace kiln::native {

/// Registers every eager CUDA kernel at the CUDA dispatch key: factories,
/// copies, views (the CPU view kernels, which touch no data), the pointwise
/// ops of PointwiseMath.h, reductions, softmax and the cuBLAS products. Runs
/// once (later calls do nothing); kiln._C calls it when it loads, after every
/// static registration of the op list has run.
void register_cuda_kernels();

// The parts, one per file.
void register_cuda_pointwise_kernels();  // CudaPointwiseKernels.cpp
void register_cuda_factory_kernels();    // CudaFactoryKernels.cpp
void register_cuda_reduce_kernels();     // CudaReduceKernels.cpp
void register_cuda_blas_kernels();       // CudaBlasKernels.cpp
void register_cuda_norm_kernels();       // CudaNormKernels.cpp
void register_cuda_loss_kernels();       // CudaLossKernels.cpp
void register_cuda_index_kernels();      // CudaIndexKernels.cpp
void register_cuda_put_kernels();        // CudaPutKernels.cpp
void register_cuda_random_kernels();     // CudaRandomKernels.cpp
void register_cuda_optim_kernels();      // CudaOptimKernels.cpp
void register_cuda_shape_kernels();      // CudaShapeKernels.cpp

}  // namespace kiln::native
