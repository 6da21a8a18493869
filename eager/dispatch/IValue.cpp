// IValue accessors and printing.
#include "eager/dispatch/IValue.h"

namespace kiln {

std::string_view IValue::tag_name() const {
  switch (tag()) {
    case Tag::None: return "None";
    case Tag::Tensor: return "Tensor";
    case Tag::Double: return "float";
    case Tag::Int: return "int";
    case Tag::Bool: return "bool";
    case Tag::String: return "str";
    case Tag::IntList: return "int[]";
    case Tag::DoubleList: return "float[]";
    case Tag::BoolList: return "bool[]";
    case Tag::TensorList: return "Tensor[]";
    case Tag::OptionalTensorList: return "Tensor?[]";
    case Tag::DType: return "ScalarType";
    case Tag::Device: return "Device";
    case Tag::Generator: return "Generator";
    case Tag::ComplexDouble: return "complex";
  }
  return "?";
}

double IValue::to_double() const {
  if (tag() == Tag::Int) return static_cast<double>(std::get<int64_t>(v_));
  return get<double>("float");
}

Scalar IValue::to_scalar() const {
  switch (tag()) {
    case Tag::Double: return Scalar(std::get<double>(v_));
    case Tag::Int: return Scalar(std::get<int64_t>(v_));
    case Tag::Bool: return Scalar(std::get<bool>(v_));
    case Tag::ComplexDouble: return Scalar(std::get<std::complex<double>>(v_));
    default: break;
  }
  KILN_FAIL(Runtime, "IValue: expected Scalar but got ", tag_name());
}

std::ostream& operator<<(std::ostream& os, const IValue& v) {
  switch (v.tag()) {
    case IValue::Tag::None: return os << "None";
    case IValue::Tag::Tensor: {
      const Tensor& t = v.to_tensor();
      return os << "Tensor(" << t.dtype() << ", " << t.sizes() << ")";
    }
    case IValue::Tag::Double: return os << v.to_double();
    case IValue::Tag::Int: return os << v.to_int();
    case IValue::Tag::Bool: return os << (v.to_bool() ? "True" : "False");
    case IValue::Tag::ComplexDouble: return os << Scalar(v.to_complex_double());
    case IValue::Tag::String: return os << '"' << v.to_string() << '"';
    case IValue::Tag::IntList: return os << v.to_int_list();
    case IValue::Tag::DType: return os << v.to_dtype();
    case IValue::Tag::Device: return os << v.to_device();
    default: return os << v.tag_name();
  }
}

}  // namespace kiln
