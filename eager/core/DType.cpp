// DType names, parsing and the promotion table.
#include "eager/core/DType.h"

#include <array>
#include <atomic>

#include "eager/core/Error.h"

namespace kiln {

std::string_view dtype_name(DType t) {
  switch (t) {
#define KILN_DTYPE_NAME_(ctype, name, pyname, legacy, cat) \
  case DType::name:                                       \
    return pyname;
    KILN_FORALL_DTYPES_AND_COMPLEX(KILN_DTYPE_NAME_)
#undef KILN_DTYPE_NAME_
  }
  return "unknown";
}

std::string_view legacy_tensor_name(DType t) {
  switch (t) {
#define KILN_DTYPE_LEGACY_(ctype, name, pyname, legacy, cat) \
  case DType::name:                                         \
    return legacy;
    KILN_FORALL_DTYPES_AND_COMPLEX(KILN_DTYPE_LEGACY_)
#undef KILN_DTYPE_LEGACY_
  }
  return "Tensor";
}

std::string_view cpp_type_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Float16: return "kiln::Half";
    case DType::BFloat16: return "kiln::BFloat16";
    case DType::Int8: return "int8_t";
    case DType::Int16: return "int16_t";
    case DType::Int32: return "int";
    case DType::Int64: return "int64_t";
    case DType::UInt8: return "uint8_t";
    case DType::Bool: return "bool";
    case DType::Complex64: return "c10::complex<float>";
    case DType::Complex128: return "c10::complex<double>";
  }
  return "unknown";
}

std::string_view scalar_type_name(DType t) {
  std::string_view legacy = legacy_tensor_name(t);
  legacy.remove_suffix(std::string_view("Tensor").size());
  return legacy;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias kAliases[] = {
#define KILN_DTYPE_ALIAS_(ctype, name, pyname, legacy, cat) {pyname, DType::name},
      KILN_FORALL_DTYPES_AND_COMPLEX(KILN_DTYPE_ALIAS_)
#undef KILN_DTYPE_ALIAS_
      {"float", DType::Float32},  {"double", DType::Float64}, {"half", DType::Float16},
      {"short", DType::Int16},    {"int", DType::Int32},      {"long", DType::Int64},
      {"cfloat", DType::Complex64}, {"cdouble", DType::Complex128},
  };
  for (const auto& a : kAliases) {
    if (a.name == name) return a.dtype;
  }
  return std::nullopt;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  constexpr auto f4 = DType::Float32, f8 = DType::Float64, f2 = DType::Float16, bf = DType::BFloat16,
                 i1 = DType::Int8, i2 = DType::Int16, i4 = DType::Int32, i8 = DType::Int64,
                 u1 = DType::UInt8, b1 = DType::Bool, c8 = DType::Complex64, c16 = DType::Complex128;
  // Rows and columns in enum order: f4 f8 f2 bf i1 i2 i4 i8 u1 b1 c8 c16.
  // complex64 with float64 is complex128, as in PyTorch.
  static constexpr std::array<std::array<DType, kNumDTypes>, kNumDTypes> kTable = {{
      /* f4  */ {f4, f8, f4, f4, f4, f4, f4, f4, f4, f4, c8, c16},
      /* f8  */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, c16, c16},
      /* f2  */ {f4, f8, f2, f4, f2, f2, f2, f2, f2, f2, c8, c16},
      /* bf  */ {f4, f8, f4, bf, bf, bf, bf, bf, bf, bf, c8, c16},
      /* i1  */ {f4, f8, f2, bf, i1, i2, i4, i8, i2, i1, c8, c16},
      /* i2  */ {f4, f8, f2, bf, i2, i2, i4, i8, i2, i2, c8, c16},
      /* i4  */ {f4, f8, f2, bf, i4, i4, i4, i8, i4, i4, c8, c16},
      /* i8  */ {f4, f8, f2, bf, i8, i8, i8, i8, i8, i8, c8, c16},
      /* u1  */ {f4, f8, f2, bf, i2, i2, i4, i8, u1, u1, c8, c16},
      /* b1  */ {f4, f8, f2, bf, i1, i2, i4, i8, u1, b1, c8, c16},
      /* c8  */ {c8, c16, c8, c8, c8, c8, c8, c8, c8, c8, c8, c16},
      /* c16 */ {c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16},
  }};
  return kTable[static_cast<size_t>(a)][static_cast<size_t>(b)];
}

namespace {
std::atomic<DType> g_default_dtype{DType::Float32};
}

DType default_dtype() { return g_default_dtype.load(std::memory_order_relaxed); }

void set_default_dtype(DType t) {
  KILN_CHECK_TYPE(t == DType::Float32 || t == DType::Float64 || t == DType::Float16 ||
                      t == DType::BFloat16,
                  "only floating-point types are supported as the default type");
  g_default_dtype.store(t, std::memory_order_relaxed);
}

void fail_dtype_not_implemented(DType t) {
  KILN_FAIL(NotImplemented, "this operation is not implemented for '", scalar_type_name(t),
            "' tensors yet");
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

}  // namespace kiln
