// Types of IR values: TensorType (dtype, device, symbolic sizes, optional
// strides, requires_grad) and the non-tensor types op arguments carry.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "eager/core/DType.h"
#include "eager/core/Device.h"
#include "ir/SymbolicSize.h"

namespace kiln {
class Tensor;
}

namespace kiln::ir {

/// What is known about a tensor value. Unknown parts are nullopt: a plain
/// `Tensor` knows nothing, `f32[2, s0]` knows dtype and sizes.
struct TensorType {
  std::optional<DType> dtype;
  std::optional<std::vector<SymbolicSize>> sizes;    // nullopt: rank unknown
  std::optional<std::vector<SymbolicSize>> strides;  // nullopt: layout unknown
  Device device;                                     // cpu unless set
  bool requires_grad = false;

  /// Everything a concrete tensor says: dtype, sizes, strides, device, requires_grad.
  [[nodiscard]] static TensorType of(const Tensor& t);
  /// True when nothing beyond "a cpu tensor" is known (prints as `Tensor`).
  [[nodiscard]] bool is_unrefined() const {
    return !dtype && !sizes && !strides && device == Device() && !requires_grad;
  }
  bool operator==(const TensorType&) const = default;
};

/// A value's type. Cheap to copy (list and optional element types are shared).
class Type {
 public:
  enum class Kind : uint8_t {
    Tensor, Int, Float, Bool, Complex, Scalar, Str, None, ScalarType, Device, Generator, List, Optional
  };

  Type() : Type(Kind::None) {}
  [[nodiscard]] static Type tensor(TensorType t = {}) {
    Type r(Kind::Tensor);
    r.tensor_ = std::move(t);
    return r;
  }
  [[nodiscard]] static Type int_type() { return Type(Kind::Int); }
  [[nodiscard]] static Type float_type() { return Type(Kind::Float); }
  [[nodiscard]] static Type bool_type() { return Type(Kind::Bool); }
  [[nodiscard]] static Type complex_type() { return Type(Kind::Complex); }
  /// A number of any kind (an op's `Scalar` return).
  [[nodiscard]] static Type scalar_type() { return Type(Kind::Scalar); }
  [[nodiscard]] static Type str_type() { return Type(Kind::Str); }
  [[nodiscard]] static Type none_type() { return Type(Kind::None); }
  [[nodiscard]] static Type scalar_type_type() { return Type(Kind::ScalarType); }
  [[nodiscard]] static Type device_type() { return Type(Kind::Device); }
  [[nodiscard]] static Type generator_type() { return Type(Kind::Generator); }
  /// A list; a tensor element type loses its refinements (lists hold `Tensor`).
  [[nodiscard]] static Type list(const Type& element);
  [[nodiscard]] static Type optional(const Type& element);

  [[nodiscard]] Kind kind() const { return kind_; }
  [[nodiscard]] bool is_tensor() const { return kind_ == Kind::Tensor; }
  /// The tensor refinements; RuntimeError for a non-tensor type.
  [[nodiscard]] const TensorType& tensor_type() const;
  /// The element of a List or Optional; RuntimeError otherwise.
  [[nodiscard]] const Type& element() const;

  /// The text form the printer writes and the parser reads:
  /// `f32[2, s0]`, `f32[*]`, `?[3]`, `Tensor`, `i64[4]{1, 4}@cuda:0 requires_grad`,
  /// `int`, `float`, `Scalar`, `Tensor[]`, `int[]`, `Tensor?`, `ScalarType`, `Device`, `None`.
  [[nodiscard]] std::string str() const;

  bool operator==(const Type& o) const;

 private:
  explicit Type(Kind k) : kind_(k) {}
  Kind kind_;
  TensorType tensor_;
  std::shared_ptr<const Type> element_;
};

std::ostream& operator<<(std::ostream& os, const Type& t);

/// The short dtype names of the text form: f32, f64, f16, bf16, i8, i16, i32,
/// i64, u8, b8, c64, c128.
[[nodiscard]] std::string_view dtype_short_name(DType t);
/// The inverse of dtype_short_name; nullopt for any other text.
[[nodiscard]] std::optional<DType> dtype_from_short_name(std::string_view s);
/// The name of a non-tensor, non-composite type kind ("int", "ScalarType", ...).
[[nodiscard]] std::string_view type_kind_name(Type::Kind k);

}  // namespace kiln::ir
