// Where a kernel writes its result: ResultInto, and scalar_operand, the two
// names the kernels of `kernel_into` families and their generated entry points
// (kiln/generated/IntoKernels.cpp) share.
//
// Note [Three ways to write a result]
// -----------------------------------
// Most ops come as a function (a new tensor), an in-place method (`self` is
// both the first input and the output: never resized, so a broadcast that
// would grow it is an error) and an out= form (resized to the broadcast shape,
// with PyTorch's warning when it held elements). Each op's kernel is written
// once, taking a ResultInto and the `out` tensor (undefined for NewTensor,
// `self` for InPlace) and returning the tensor the caller sees:
//   Tensor <op>_into(ResultInto into, const Tensor& out, <the op's inputs>);
// ops.yaml names it with `kernel_into:` on each overload, and opgen writes the
// kernels the dispatcher calls (Note [Generated entry points], tools/opgen/into.py).
#pragma once

#include <cstdint>

#include "eager/core/Scalar.h"
#include "eager/core/Tensor.h"

namespace kiln::native {

/// See Note [Three ways to write a result].
enum class ResultInto : uint8_t { NewTensor, InPlace, Out };

/// The output argument for `into`: undefined, self or out.
[[nodiscard]] inline Tensor result_tensor(ResultInto into, const Tensor& self, const Tensor& out) {
  return into == ResultInto::NewTensor ? Tensor() : (into == ResultInto::InPlace ? self : out);
}

/// A Python number (a Scalar argument) as a 0-dim wrapped-number tensor on
/// `like`'s device, so it promotes by category only (Note [Promotion by category]).
/// The Scalar overloads of an op pass it to the Tensor overload's kernel.
/// Defined in BinaryOps.cpp.
[[nodiscard]] Tensor scalar_operand(const Scalar& value, const Tensor& like);

}  // namespace kiln::native
