// The argument checks of gather, scatter and scatter_reduce, in PyTorch's order
// and words, shared by the CPU kernels (ScatterGather.cpp) and the CUDA ones
// (eager/kernels/cuda/CudaIndexKernels.cpp); and scatter_reduce's reduction
// names, identities and dtype refusals. Device-agnostic: reads no element.
#pragma once

#include <optional>
#include <string_view>

#include "eager/kernels/cpu/indexing/IndexStubs.h"
#include "eager/ops/Tensor.h"

namespace kiln::native::indexing {

/// max(t.dim(), 1), and t's size at d reading a 0-dim tensor as [1].
[[nodiscard]] int64_t nonempty_dim(const Tensor& t);
[[nodiscard]] int64_t nonempty_size(const Tensor& t, int64_t d);

/// "<op>(): Expected dtype int32/int64 for index" (an empty index may have any dtype).
void check_index_dtype(const char* op, const Tensor& index);
/// The index no larger than self apart from `dim` (and than src when given).
void scatter_shape_check(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src);
/// scatter's reduce= ("add", "multiply").
[[nodiscard]] PutReduce reduce_from_name(std::string_view reduce);
/// The checks scatter's meta function makes, before anything is allocated or written (`dim` wrapped).
void check_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src,
                   std::optional<std::string_view> reduce);

/// scatter_reduce's put for `reduce` (mean adds, then divides by the count).
[[nodiscard]] PutReduce scatter_reduction(std::string_view reduce);
/// The value a position starts from when include_self is false: the reduction's identity.
[[nodiscard]] Scalar reduction_identity(std::string_view reduce, DType dtype);
/// scatter_reduce's checks (`dim` wrapped).
void check_scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          std::string_view reduce);
/// The reductions a dtype has no kernel for (mean of bool, amax/amin of complex), naming torch's
/// kernel for `device` ("cpu", "cuda"): "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'".
void check_scatter_reduce_dtype(DType dtype, std::string_view reduce, const char* device);

}  // namespace kiln::native::indexing
