// Shared set-up of the binary and ternary pointwise ops (BinaryOps.cpp,
// CompareOps.cpp, LogicalOps.cpp, TernaryOps.cpp): how each op builds its
// TensorIterator, wraps Python numbers, and reports unsupported dtypes. The
// kernels themselves are declared by opgen (kiln/generated/NativeFunctions.h).
// See Note [Three ways to write a result] (ResultInto.h).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "eager/core/Scalar.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/ResultInto.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

/// PyTorch's build_borrowing_binary_op: inputs promoted to their common dtype,
/// the result cast to out=/in-place outputs when that is a safe cast. With
/// `integer_to_float`, integer and bool inputs compute in the default float
/// dtype (true division).
[[nodiscard]] TensorIterator binary_op_iterator(const char* name, ResultInto into, const Tensor& out,
                                                const Tensor& self, const Tensor& other,
                                                bool integer_to_float = false);

/// PyTorch's build_borrowing_comparison_op: inputs promoted to their common
/// dtype; the result is bool, or converted into an out= tensor of any dtype.
/// The loop computes in input(0)'s dtype and writes bool.
[[nodiscard]] TensorIterator comparison_op_iterator(const char* name, ResultInto into, const Tensor& out,
                                                    const Tensor& self, const Tensor& other);

/// An in-place op's checks, in PyTorch's order (before any dtype check): self
/// has no element twice, no input partly overlaps it, and the inputs broadcast
/// to exactly self's shape ("output with shape [3] doesn't match the broadcast
/// shape [2, 3]").
void check_inplace(const Tensor& self, std::initializer_list<const Tensor*> inputs);

/// Bumps the version of a written out=/in-place tensor and returns the result.
Tensor finish(const TensorIterator& iter, ResultInto into);

/// NotImplementedError "\"add_cpu\" not implemented for 'Float'" (PyTorch's dispatch-macro error).
[[noreturn]] void fail_not_implemented(const char* kernel_name, DType dtype);

/// The names PyTorch's dtype-mismatch messages print (caffe2 TypeMeta):
/// "float", "double", "c10::Half", "long int", "unsigned char", ...
[[nodiscard]] std::string_view type_meta_name(DType dtype);

/// The value of a one-element tensor as a Scalar (bool, int64 or double).
[[nodiscard]] Scalar tensor_item(const Tensor& t);

/// A zero of the kind tensor_item returns for `dtype` (bool, int64, double or complex): what a meta
/// tensor's value stands for where only its kind decides the result (masked_fill's and index_fill's
/// tensor value on meta; Note [Meta kernels], tools/opgen/README.md).
[[nodiscard]] Scalar zero_of_item_kind(DType dtype);

}  // namespace kiln::native
