// DType: the element types a tensor can hold, their names, sizes and promotion.
#pragma once

#include <complex>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>

#include "eager/core/Half.h"

namespace kiln {

/// Every real dtype once: _(C++ type, Enum name, Python name, legacy tensor name, category).
/// Categories order type promotion: Bool < Integral < Floating < Complex.
/// Note [One dtype list]: everything that enumerates dtypes (names, sizes,
/// promotion tables, the Python dtype objects, numpy and DLPack codes) expands
/// KILN_FORALL_DTYPES_AND_COMPLEX or is checked against kNumDTypes with a
/// static_assert. See Note [Complex dtypes] for why the complex ones are a
/// second list.
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

// Note [Complex dtypes]
// ---------------------
// complex64 and complex128 hold std::complex<float> / std::complex<double>
// (real part first, as PyTorch's c10::complex and numpy lay them out). They
// are enumerated by their own list because most kernels are written for real
// numbers (ordering, rounding, Vec<T> arithmetic): visit_dtype visits the real
// dtypes only and raises NotImplementedError ("... not implemented for
// 'ComplexFloat'") for a complex one, as PyTorch's AT_DISPATCH macros do for
// a kernel without a complex case. A kernel that handles complex numbers opts
// in with visit_dtype_and_complex. So adding the dtypes changed no kernel's
// behaviour for real inputs, and each complex kernel is a deliberate one.
//
// Python complex numbers reach ops as a Scalar of kind Complex (Scalar.h): it
// promotes by category like a wrapped number (float32 tensor * 1j is
// complex64, float64 * 1j complex128), and reading one as a real number with a
// nonzero imaginary part fails (float_tensor.fill_(1j)), as in PyTorch.
// Kernels that move elements by size (indexing, tril, repeat) take complex128
// as a 16-byte word (ElementWord.h). There is no lazy conjugate bit: conj, mH,
// H and adjoint of a complex tensor return conjugated copies, not views.
#define KILN_FORALL_COMPLEX_DTYPES(_)                                                    \
  _(std::complex<float>, Complex64, "complex64", "ComplexFloatTensor", Complex)         \
  _(std::complex<double>, Complex128, "complex128", "ComplexDoubleTensor", Complex)

#define KILN_FORALL_DTYPES_AND_COMPLEX(_) KILN_FORALL_DTYPES(_) KILN_FORALL_COMPLEX_DTYPES(_)

enum class DType : int8_t {
#define KILN_DTYPE_ENUM_(ctype, name, pyname, legacy, cat) name,
  KILN_FORALL_DTYPES_AND_COMPLEX(KILN_DTYPE_ENUM_)
#undef KILN_DTYPE_ENUM_
};

#define KILN_DTYPE_COUNT_(...) +1
inline constexpr int kNumDTypes = 0 KILN_FORALL_DTYPES_AND_COMPLEX(KILN_DTYPE_COUNT_);
#undef KILN_DTYPE_COUNT_
static_assert(kNumDTypes == 12, "update the promotion table in DType.cpp");

enum class DTypeCategory : int8_t { Bool = 0, Integral = 1, Floating = 2, Complex = 3 };

/// Size in bytes of one element.
[[nodiscard]] constexpr int64_t itemsize(DType t) {
  switch (t) {
#define KILN_DTYPE_SIZE_(ctype, name, pyname, legacy, cat) \
  case DType::name:                                         \
    return static_cast<int64_t>(sizeof(ctype));
    KILN_FORALL_DTYPES_AND_COMPLEX(KILN_DTYPE_SIZE_)
#undef KILN_DTYPE_SIZE_
  }
  return 0;
}

[[nodiscard]] constexpr DTypeCategory category(DType t) {
  switch (t) {
#define KILN_DTYPE_CAT_(ctype, name, pyname, legacy, cat) \
  case DType::name:                                      \
    return DTypeCategory::cat;
    KILN_FORALL_DTYPES_AND_COMPLEX(KILN_DTYPE_CAT_)
#undef KILN_DTYPE_CAT_
  }
  return DTypeCategory::Bool;
}

[[nodiscard]] constexpr bool is_floating_point(DType t) { return category(t) == DTypeCategory::Floating; }
[[nodiscard]] constexpr bool is_integral(DType t, bool include_bool) {
  return category(t) == DTypeCategory::Integral || (include_bool && t == DType::Bool);
}
[[nodiscard]] constexpr bool is_signed(DType t) { return t != DType::UInt8 && t != DType::Bool; }
[[nodiscard]] constexpr bool is_complex(DType t) { return category(t) == DTypeCategory::Complex; }
/// Whether tensors of this dtype can require gradients (floating and complex, as in PyTorch).
[[nodiscard]] constexpr bool is_differentiable_dtype(DType t) {
  return category(t) == DTypeCategory::Floating || category(t) == DTypeCategory::Complex;
}
/// complex64 -> float32, complex128 -> float64; a real dtype is its own.
[[nodiscard]] constexpr DType to_real_value_type(DType t) {
  return t == DType::Complex64 ? DType::Float32 : t == DType::Complex128 ? DType::Float64 : t;
}
/// float64 -> complex128; every other floating dtype -> complex64 (kiln has no
/// complex32); a complex dtype is its own.
[[nodiscard]] constexpr DType to_complex_type(DType t) {
  return is_complex(t) ? t : t == DType::Float64 ? DType::Complex128 : DType::Complex64;
}

template <typename T>
inline constexpr bool is_complex_v = false;
template <typename T>
inline constexpr bool is_complex_v<std::complex<T>> = true;

/// "float32", "int64", ...
[[nodiscard]] std::string_view dtype_name(DType t);
/// "Float", "Long", "Half", ... (PyTorch's ScalarType names, used in error messages).
[[nodiscard]] std::string_view scalar_type_name(DType t);

/// The C++ name PyTorch's overflow messages use for a dtype: "uint8_t", "int", "float", ...
[[nodiscard]] std::string_view cpp_type_name(DType dtype);
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
KILN_FORALL_DTYPES_AND_COMPLEX(KILN_DTYPE_OF_)
#undef KILN_DTYPE_OF_

/// NotImplementedError "<what> not implemented for 'ComplexFloat'" (visit_dtype's complex case).
[[noreturn]] void fail_dtype_not_implemented(DType t);

#define KILN_DTYPE_VISIT_(ctype, name, pyname, legacy, cat) \
  case DType::name:                                        \
    return fn(ctype{});

/// Runs `fn` with a value of the C++ element type of real dtype `t`:
///   visit_dtype(t, [&](auto tag) { using T = decltype(tag); ... });
/// A complex `t` raises NotImplementedError (Note [Complex dtypes]).
template <typename Fn>
decltype(auto) visit_dtype(DType t, Fn&& fn) {
  switch (t) {
    KILN_FORALL_DTYPES(KILN_DTYPE_VISIT_)
    default:
      break;
  }
  fail_dtype_not_implemented(t);
}

/// visit_dtype for kernels that also handle std::complex<float> / <double>.
template <typename Fn>
decltype(auto) visit_dtype_and_complex(DType t, Fn&& fn) {
  switch (t) {
    KILN_FORALL_DTYPES_AND_COMPLEX(KILN_DTYPE_VISIT_)
  }
  return fn(float{});
}
#undef KILN_DTYPE_VISIT_

}  // namespace kiln
