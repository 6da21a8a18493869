// Attribute: literal payloads, their types, boxed values and text.
#include "ir/Attribute.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "eager/core/Error.h"
#include "eager/dispatch/IValue.h"

namespace kiln::ir {

template <typename T>
const T& Attribute::get() const {
  const T* p = std::get_if<T>(&v_);
  KILN_CHECK(p != nullptr, "ir: attribute ", str(), " is not of the kind asked for");
  return *p;
}

Attribute Attribute::of_float_list(std::vector<double> v) {
  if (v.empty()) return of_int_list({});
  return Attribute(V(std::move(v)));
}

Attribute Attribute::of_bool_list(std::vector<bool> v) {
  if (v.empty()) return of_int_list({});
  return Attribute(V(std::move(v)));
}

Attribute Attribute::of_scalar(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Bool: return of_bool(s.to_bool());
    case Scalar::Kind::Int: return of_int(s.to_int64());
    case Scalar::Kind::Double: return of_float(s.to_double());
    case Scalar::Kind::Complex: return of_complex(s.to_complex_double());
  }
  return none();
}

Attribute Attribute::of_ivalue(const IValue& v) {
  switch (v.tag()) {
    case IValue::Tag::None: return none();
    case IValue::Tag::Double: return of_float(v.to_double());
    case IValue::Tag::Int: return of_int(v.to_int());
    case IValue::Tag::Bool: return of_bool(v.to_bool());
    case IValue::Tag::String: return of_str(v.to_string());
    case IValue::Tag::IntList: {
      const DimVector& l = v.to_int_list();
      return of_int_list(std::vector<int64_t>(l.begin(), l.end()));
    }
    case IValue::Tag::DoubleList: return of_float_list(v.to_double_list());
    case IValue::Tag::BoolList: return of_bool_list(v.to_bool_list());
    case IValue::Tag::DType: return of_dtype(v.to_dtype());
    case IValue::Tag::Device: return of_device(v.to_device());
    case IValue::Tag::ComplexDouble: return of_complex(v.to_complex_double());
    case IValue::Tag::Tensor:
    case IValue::Tag::TensorList:
    case IValue::Tag::OptionalTensorList:
    case IValue::Tag::Generator: break;
  }
  KILN_FAIL(Value, "ir: a ", v.tag_name(), " has no literal form (it must be a graph value)");
}

IValue Attribute::to_ivalue() const {
  switch (kind()) {
    case Kind::None: return IValue();
    case Kind::Bool: return IValue(to_bool());
    case Kind::Int: return IValue(to_int());
    case Kind::Float: return IValue(to_float());
    case Kind::Complex: return IValue(to_complex());
    case Kind::Str: return IValue(to_str());
    case Kind::IntList: return IValue(DimVector(std::span<const int64_t>(to_int_list())));
    case Kind::FloatList: return IValue(to_float_list());
    case Kind::BoolList: return IValue(to_bool_list());
    case Kind::DType: return IValue(to_dtype());
    case Kind::Device: return IValue(to_device());
  }
  return IValue();
}

Type Attribute::type() const {
  switch (kind()) {
    case Kind::None: return Type::none_type();
    case Kind::Bool: return Type::bool_type();
    case Kind::Int: return Type::int_type();
    case Kind::Float: return Type::float_type();
    case Kind::Complex: return Type::complex_type();
    case Kind::Str: return Type::str_type();
    case Kind::IntList: return Type::list(Type::int_type());
    case Kind::FloatList: return Type::list(Type::float_type());
    case Kind::BoolList: return Type::list(Type::bool_type());
    case Kind::DType: return Type::scalar_type_type();
    case Kind::Device: return Type::device_type();
  }
  return Type::none_type();
}

bool Attribute::operator==(const Attribute& o) const {
  // Floats compare by text so nan equals nan and 0.0 differs from -0.0.
  if (kind() == Kind::Float && o.kind() == Kind::Float) return format_float(to_float()) == format_float(o.to_float());
  if (kind() != o.kind()) return false;
  if (kind() == Kind::Complex || kind() == Kind::FloatList) return str() == o.str();
  return v_ == o.v_;
}

std::string format_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string quote_string(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (u < 0x20 || u >= 0x7f) {
          out += "\\x";
          out += kHex[u >> 4];
          out += kHex[u & 15];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string Attribute::str() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Attribute& a) {
  auto list = [&os](const auto& items, auto each) {
    os << '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) os << ", ";
      each(items[i]);
    }
    os << ']';
  };
  switch (a.kind()) {
    case Attribute::Kind::None: return os << "None";
    case Attribute::Kind::Bool: return os << (a.to_bool() ? "True" : "False");
    case Attribute::Kind::Int: return os << a.to_int();
    case Attribute::Kind::Float: return os << format_float(a.to_float());
    case Attribute::Kind::Complex:
      return os << "complex(" << format_float(a.to_complex().real()) << ", " << format_float(a.to_complex().imag())
                << ')';
    case Attribute::Kind::Str: return os << quote_string(a.to_str());
    case Attribute::Kind::IntList: list(a.to_int_list(), [&](int64_t v) { os << v; }); return os;
    case Attribute::Kind::FloatList: list(a.to_float_list(), [&](double v) { os << format_float(v); }); return os;
    case Attribute::Kind::BoolList: list(a.to_bool_list(), [&](bool v) { os << (v ? "True" : "False"); }); return os;
    case Attribute::Kind::DType: return os << dtype_name(a.to_dtype());
    case Attribute::Kind::Device: return os << a.to_device().str();
  }
  return os;
}

}  // namespace kiln::ir

