// Types of IR values and their text form.
#include "ir/Type.h"

#include <sstream>

#include "eager/core/Error.h"
#include "eager/core/Tensor.h"

namespace kiln::ir {

std::string_view dtype_short_name(DType t) {
  switch (t) {
    case DType::Float32: return "f32";
    case DType::Float64: return "f64";
    case DType::Float16: return "f16";
    case DType::BFloat16: return "bf16";
    case DType::Int8: return "i8";
    case DType::Int16: return "i16";
    case DType::Int32: return "i32";
    case DType::Int64: return "i64";
    case DType::UInt8: return "u8";
    case DType::Bool: return "b8";
    case DType::Complex64: return "c64";
    case DType::Complex128: return "c128";
  }
  return "?";
}
static_assert(kNumDTypes == 12, "give the new dtype a short name in dtype_short_name");

std::optional<DType> dtype_from_short_name(std::string_view s) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto t = static_cast<DType>(i);
    if (dtype_short_name(t) == s) return t;
  }
  return std::nullopt;
}

std::string_view type_kind_name(Type::Kind k) {
  switch (k) {
    case Type::Kind::Tensor: return "Tensor";
    case Type::Kind::Int: return "int";
    case Type::Kind::Float: return "float";
    case Type::Kind::Bool: return "bool";
    case Type::Kind::Complex: return "complex";
    case Type::Kind::Scalar: return "Scalar";
    case Type::Kind::Str: return "str";
    case Type::Kind::None: return "None";
    case Type::Kind::ScalarType: return "ScalarType";
    case Type::Kind::Device: return "Device";
    case Type::Kind::Generator: return "Generator";
    case Type::Kind::List: return "list";
    case Type::Kind::Optional: return "optional";
  }
  return "?";
}

TensorType TensorType::of(const Tensor& t) {
  TensorType r;
  r.dtype = t.dtype();
  r.sizes.emplace();
  for (int64_t s : t.sizes()) r.sizes->emplace_back(s);
  r.strides.emplace();
  for (int64_t s : t.strides()) r.strides->emplace_back(s < 0 ? 0 : s);
  r.device = t.device();
  r.requires_grad = t.requires_grad();
  return r;
}

Type Type::list(const Type& element) {
  Type r(Kind::List);
  r.element_ = std::make_shared<const Type>(element.is_tensor() ? Type::tensor() : element);
  return r;
}

Type Type::optional(const Type& element) {
  Type r(Kind::Optional);
  r.element_ = std::make_shared<const Type>(element);
  return r;
}

const TensorType& Type::tensor_type() const {
  KILN_CHECK(is_tensor(), "ir: type ", str(), " is not a tensor type");
  return tensor_;
}

const Type& Type::element() const {
  KILN_CHECK(element_ != nullptr, "ir: type ", str(), " has no element type");
  return *element_;
}

bool Type::operator==(const Type& o) const {
  if (kind_ != o.kind_) return false;
  if (kind_ == Kind::Tensor) return tensor_ == o.tensor_;
  if (kind_ == Kind::List || kind_ == Kind::Optional) return *element_ == *o.element_;
  return true;
}

namespace {

void print_dims(std::ostream& os, const std::vector<SymbolicSize>& dims) {
  for (size_t i = 0; i < dims.size(); ++i) os << (i ? ", " : "") << dims[i];
}

void print_tensor(std::ostream& os, const TensorType& t) {
  if (!t.dtype && !t.sizes && !t.strides) {
    os << "Tensor";
  } else {
    os << (t.dtype ? dtype_short_name(*t.dtype) : "?") << '[';
    if (t.sizes) print_dims(os, *t.sizes);
    else os << '*';
    os << ']';
    if (t.strides) {
      os << '{';
      print_dims(os, *t.strides);
      os << '}';
    }
  }
  if (t.device != Device()) os << '@' << t.device.str();
  if (t.requires_grad) os << " requires_grad";
}

}  // namespace

std::string Type::str() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Type& t) {
  switch (t.kind()) {
    case Type::Kind::Tensor: print_tensor(os, t.tensor_type()); return os;
    case Type::Kind::List: return os << t.element() << "[]";
    case Type::Kind::Optional: return os << t.element() << '?';
    default: return os << type_kind_name(t.kind());
  }
}

}  // namespace kiln::ir
