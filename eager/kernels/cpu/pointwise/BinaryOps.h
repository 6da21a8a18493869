// Shared set-up of the binary and ternary pointwise ops (BinaryOps.cpp,
// CompareOps.cpp, LogicalOps.cpp, TernaryOps.cpp): how each op builds its
// TensorIterator, wraps Python numbers, and reports unsupported dtypes. The
// kernels themselves are declared by opgen (kiln/generated/NativeFunctions.h).
//
// Note [Three ways to write a result]
// -----------------------------------
// Every pointwise op comes as a function (a new tensor), an in-place method
// (`self` is both the first input and the output: never resized, so a
// broadcast that would grow it is an error) and an out= form (resized to the
// broadcast shape, with PyTorch's warning when it held elements). One builder
// per op family takes a ResultInto and the `out` tensor (undefined for
// NewTensor, `self` for InPlace) and returns the tensor the caller sees.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "eager/core/Scalar.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

/// See Note [Three ways to write a result].
enum class ResultInto : uint8_t { NewTensor, InPlace, Out };

/// The output argument for `into`: undefined, self or out.
[[nodiscard]] inline Tensor result_tensor(ResultInto into, const Tensor& self, const Tensor& out) {
  return into == ResultInto::NewTensor ? Tensor() : (into == ResultInto::InPlace ? self : out);
}

/// A Python number (a Scalar argument) as a 0-dim wrapped-number tensor on
/// `like`'s device, so it promotes by category only (Note [Promotion by category]).
[[nodiscard]] Tensor scalar_operand(const Scalar& value, const Tensor& like);

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

}  // namespace kiln::native

// Note [Overload families]
// ------------------------
// ops.yaml names one kernel per overload, on one pattern (see the head of
// eager/ops/pointwise_binary.yaml): <op>_cpu, <op>_scalar_cpu, <op>_cpu_,
// <op>_scalar_cpu_, <op>_out_cpu, <op>_scalar_out_cpu, and for ops that take a
// Scalar first, <op>_scalar_tensor_cpu and <op>_scalar_tensor_out_cpu. These
// macros define them over one builder per op, written before the macro in the
// same file:
//   Tensor <op>_into(ResultInto into, const Tensor& out, const Tensor& self, const Tensor& other);
// A Scalar argument becomes a wrapped-number tensor (scalar_operand).

/// The six Tensor/Scalar x function/in-place/out= kernels of a binary op.
#define KILN_BINARY_OVERLOAD_FAMILY(op)                                                                 \
  Tensor op##_cpu(const Tensor& self, const Tensor& other) {                                           \
    return op##_into(ResultInto::NewTensor, Tensor(), self, other);                                    \
  }                                                                                                    \
  Tensor op##_scalar_cpu(const Tensor& self, const Scalar& other) {                                    \
    return op##_into(ResultInto::NewTensor, Tensor(), self, scalar_operand(other, self));              \
  }                                                                                                    \
  Tensor op##_cpu_(const Tensor& self, const Tensor& other) {                                          \
    return op##_into(ResultInto::InPlace, self, self, other);                                          \
  }                                                                                                    \
  Tensor op##_scalar_cpu_(const Tensor& self, const Scalar& other) {                                   \
    return op##_into(ResultInto::InPlace, self, self, scalar_operand(other, self));                    \
  }                                                                                                    \
  Tensor op##_out_cpu(const Tensor& self, const Tensor& other, const Tensor& out) {                    \
    return op##_into(ResultInto::Out, out, self, other);                                               \
  }                                                                                                    \
  Tensor op##_scalar_out_cpu(const Tensor& self, const Scalar& other, const Tensor& out) {             \
    return op##_into(ResultInto::Out, out, self, scalar_operand(other, self));                         \
  }

/// <op>(Scalar self, Tensor other) and its out= form.
#define KILN_BINARY_SCALAR_TENSOR_OVERLOADS(op)                                                         \
  Tensor op##_scalar_tensor_cpu(const Scalar& self, const Tensor& other) {                             \
    return op##_into(ResultInto::NewTensor, Tensor(), scalar_operand(self, other), other);             \
  }                                                                                                    \
  Tensor op##_scalar_tensor_out_cpu(const Scalar& self, const Tensor& other, const Tensor& out) {      \
    return op##_into(ResultInto::Out, out, scalar_operand(self, other), other);                        \
  }

/// <op>(Tensor self, Tensor other) and its out= form (maximum, logical_and, ...).
#define KILN_BINARY_FUNCTION_AND_OUT(op)                                                                \
  Tensor op##_cpu(const Tensor& self, const Tensor& other) {                                           \
    return op##_into(ResultInto::NewTensor, Tensor(), self, other);                                    \
  }                                                                                                    \
  Tensor op##_out_cpu(const Tensor& self, const Tensor& other, const Tensor& out) {                    \
    return op##_into(ResultInto::Out, out, self, other);                                               \
  }
