// DType: the element types a tensor can hold, their names, sizes and promotion.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>

#include "eager/core/Half.h"

namespace kiln {

/// Every dtype once: _(C++ type, Enum name, Python name, legacy tensor name, category).
/// Categories order type promotion: Bool < Integral < Floating.
/// Note [One dtype list]: everything that enumerates dtypes (names, sizes,
/// promotion tables, the Python dtype objects, numpy and DLPack codes) expands
/// this macro or is checked against kNumDTypes with a static_assert.
#define KILN_FORALL_DTYPES(_)                             \
  _(float, Float32, "float32", "FloatTensor", Floating)   \
  _(double, Float64, "float64", "DoubleTensor", Floating) \
  _(::kiln::Half, Float16, "float16", "HalfTensor", Floating) \
  _(::kiln::BFloat16, BFloat16, "bfloat16", "BFloat16Tensor", Floating) \
  _(int8_t, Int8, "int8", "CharTensor", Integral)         \
  _(int16_t, Int16, "int16", "ShortTensor", Integral)     \
  _(int32_t, Int32, "int32", "IntTensor", Integral)       \
  _(int64_t, Int64, "int64", "LongTensor", Integral)      \
  _(uint8_t, UInt8, "uint8", "ByteTensor", Integral)      \
  _(bool, Bool, "bool", "BoolTensor", Bool)

enum class DType : int8_t {
#define KILN_DTYPE_ENUM_(ctype, name, pyname, legacy, cat) name,
  KILN_FORALL_DTYPES(KILN_DTYPE_ENUM_)
#undef KILN_DTYPE_ENUM_
};

#define KILN_DTYPE_COUNT_(...) +1
inline constexpr int kNumDTypes = 0 KILN_FORALL_DTYPES(KILN_DTYPE_COUNT_);
#undef KILN_DTYPE_COUNT_
static_assert(kNumDTypes == 10, "update the promotion table in DType.cpp");

enum class DTypeCategory : int8_t { Bool = 0, Integral = 1, Floating = 2 };

/// Size in bytes of one element.
[[nodiscard]] constexpr int64_t itemsize(DType t) {
  switch (t) {
#define KILN_DTYPE_SIZE_(ctype, name, pyname, legacy, cat) \
  case DType::name:                                         \
    return static_cast<int64_t>(sizeof(ctype));
    KILN_FORALL_DTYPES(KILN_DTYPE_SIZE_)
#undef KILN_DTYPE_SIZE_
  }
  return 0;
}

[[nodiscard]] constexpr DTypeCategory category(DType t) {
  switch (t) {
#define KILN_DTYPE_CAT_(ctype, name, pyname, legacy, cat) \
  case DType::name:                                      \
    return DTypeCategory::cat;
    KILN_FORALL_DTYPES(KILN_DTYPE_CAT_)
#undef KILN_DTYPE_CAT_
  }
  return DTypeCategory::Bool;
}

[[nodiscard]] constexpr bool is_floating_point(DType t) { return category(t) == DTypeCategory::Floating; }
[[nodiscard]] constexpr bool is_integral(DType t, bool include_bool) {
  return category(t) == DTypeCategory::Integral || (include_bool && t == DType::Bool);
}
[[nodiscard]] constexpr bool is_signed(DType t) { return t != DType::UInt8 && t != DType::Bool; }

/// "float32", "int64", ...
[[nodiscard]] std::string_view dtype_name(DType t);
/// "Float", "Long", "Half", ... (PyTorch's ScalarType names, used in error messages).
[[nodiscard]] std::string_view scalar_type_name(DType t);
/// "FloatTensor", "LongTensor", ... (used in autograd error messages).
[[nodiscard]] std::string_view legacy_tensor_name(DType t);
/// Parses "float32" and PyTorch's aliases ("float", "double", "half", "long", "int", ...).
[[nodiscard]] std::optional<DType> dtype_from_name(std::string_view name);
/// The smallest dtype that holds values of both (PyTorch's promote_types).
[[nodiscard]] DType promote_types(DType a, DType b);

/// The default floating dtype for Python floats (kiln.get_default_dtype()).
[[nodiscard]] DType default_dtype();
void set_default_dtype(DType t);  // floating dtypes only; else TypeError

std::ostream& operator<<(std::ostream& os, DType t);

/// Maps a C++ element type to its DType: dtype_of<float>() == DType::Float32.
template <typename T>
constexpr DType dtype_of();
#define KILN_DTYPE_OF_(ctype, name, pyname, legacy, cat) \
  template <>                                           \
  constexpr DType dtype_of<ctype>() {                   \
    return DType::name;                                 \
  }
KILN_FORALL_DTYPES(KILN_DTYPE_OF_)
#undef KILN_DTYPE_OF_

/// Runs `fn` with a value of the C++ element type of `t`:
///   visit_dtype(t, [&](auto tag) { using T = decltype(tag); ... });
template <typename Fn>
decltype(auto) visit_dtype(DType t, Fn&& fn) {
  switch (t) {
#define KILN_DTYPE_VISIT_(ctype, name, pyname, legacy, cat) \
  case DType::name:                                        \
    return fn(ctype{});
    KILN_FORALL_DTYPES(KILN_DTYPE_VISIT_)
#undef KILN_DTYPE_VISIT_
  }
  return fn(float{});
}

}  // namespace kiln
