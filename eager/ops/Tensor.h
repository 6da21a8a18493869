// Tensor: the user-facing handle, TensorBase (eager/core/TensorBase.h) with the
// op methods tools/opgen generates from the op list (add, view, transpose, ...;
// declared in kiln/generated/TensorMethodDecls.inc, defined in its
// TensorMethods.cpp). See Note [Tensor above the op list].
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "eager/core/GeneratorImpl.h"  // op methods take Generator? and MemoryFormat? arguments
#include "eager/core/MemoryFormat.h"
#include "eager/core/Scalar.h"
#include "eager/core/TensorBase.h"

namespace kiln {

class Tensor;
/// Op arguments of schema type Tensor[] and Tensor?[] (see tools/opgen).
using TensorList = std::span<const Tensor>;
using OptionalTensorList = std::span<const std::optional<Tensor>>;

class Tensor : public TensorBase {
 public:
  Tensor() = default;
  explicit Tensor(intrusive_ptr<TensorImpl> impl) : TensorBase(std::move(impl)) {}
  explicit Tensor(TensorBase base) : TensorBase(std::move(base)) {}

  // The op methods, generated from eager/ops/*.yaml by tools/opgen into the
  // build directory; defined in its TensorMethods.cpp.
#include "kiln/generated/TensorMethodDecls.inc"
};

}  // namespace kiln
