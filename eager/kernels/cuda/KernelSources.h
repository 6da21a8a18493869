// The CUDA C++ templates of kiln's eager CUDA kernels and their instantiations.
//
// Every eager CUDA kernel is one instantiation of a template below: a family
// (pointwise unary, pointwise binary, cast, fill, row reduction, softmax), an op
// where the family has several, and dtypes. The source of an instantiation is
// the common prelude plus its kernel; kernels are compiled by NVRTC at first use
// (eager/cuda/KernelCache.h). all_kernel_instances() lists every instantiation
// the launchers can ask for, so a test compiles each one to PTX and assembles it
// with ptxas, without a GPU (DESIGN.md, decision 6).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "eager/core/DType.h"

namespace kiln::native::cuda_kernels {

/// Operands per pointwise kernel at most (outputs and inputs), and dimensions.
inline constexpr int kMaxOperands = 4;
inline constexpr int kMaxDims = 16;

/// One kernel: its extern "C" name and its definition (without the prelude).
struct KernelInstance {
  std::string name;
  std::string body;
};

/// What every module starts with: the dtypes' CUDA spellings, conversions,
/// the accumulate types and the strided Indexer.
[[nodiscard]] const std::string& kernel_prelude();
/// The prelude followed by the kernels' bodies: one NVRTC program.
[[nodiscard]] std::string module_source(const std::vector<KernelInstance>& kernels);

/// The dtypes eager CUDA kernels handle (complex types are not among them).
[[nodiscard]] const std::vector<DType>& cuda_kernel_dtypes();
[[nodiscard]] bool is_cuda_kernel_dtype(DType dtype);

// The instantiations. Each returns the instance a launcher compiles and runs.
/// out = f(a) for a pointwise unary op of PointwiseMath.h; `in` the compute dtype, `out` the result's.
[[nodiscard]] KernelInstance unary_kernel(const std::string& op, DType in, DType out);
/// out = f(a, b) for a binary op of PointwiseMath.h; two double parameters: alpha, or the row's Scalar arguments.
[[nodiscard]] KernelInstance binary_kernel(const std::string& op, DType in, DType out);
/// out = cond ? a : b (cond bool).
[[nodiscard]] KernelInstance where_kernel(DType dtype);
/// dst = (DST) src, elementwise over strided operands of the same shape.
[[nodiscard]] KernelInstance cast_kernel(DType src, DType dst);
/// dst = value for every element (value passed as the dtype's bytes).
[[nodiscard]] KernelInstance fill_kernel(DType dtype);
/// out[r] = reduce(in[r, 0:cols]) over a contiguous [rows, cols] input: sum, prod, max, min, mean.
[[nodiscard]] KernelInstance reduce_kernel(const std::string& op, DType in, DType out);
/// Row-wise softmax / log_softmax over a contiguous [rows, cols] input.
[[nodiscard]] KernelInstance softmax_kernel(bool log, DType dtype);

// For the other template files (NnKernelSources.h, IndexKernelSources.h, ...).
/// The CUDA spelling of a dtype in the prelude ("float", "kiln::half", "long long").
[[nodiscard]] const char* template_cuda_type(DType dtype);
/// The short tag kernel names carry ("f32", "i64", "b8").
[[nodiscard]] const char* template_tag(DType dtype);
/// `text` with each "$KEY" replaced by its value (longer keys first).
[[nodiscard]] std::string fill_template(std::string text, std::vector<std::pair<std::string, std::string>> values);

/// Every instantiation the launchers may ask for, grouped by family (the family's name first).
[[nodiscard]] std::vector<std::pair<std::string, std::vector<KernelInstance>>> all_kernel_instances();

}  // namespace kiln::native::cuda_kernels
