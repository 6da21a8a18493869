// Schema types <-> IR types.
#include "ir/SchemaTypes.h"

namespace kiln::ir {

namespace {

Type base_type(SchemaType::Kind k) {
  using K = SchemaType::Kind;
  switch (k) {
    case K::Tensor: return Type::tensor();
    case K::Int:
    case K::SymInt:
    case K::Layout:
    case K::MemoryFormat: return Type::int_type();
    case K::Float: return Type::float_type();
    case K::Bool: return Type::bool_type();
    case K::Str: return Type::str_type();
    case K::Scalar: return Type::scalar_type();
    case K::ScalarType: return Type::scalar_type_type();
    case K::Device: return Type::device_type();
    case K::Generator: return Type::generator_type();
  }
  return Type::none_type();
}

bool base_accepts(SchemaType::Kind k, const Type& t) {
  using K = SchemaType::Kind;
  using T = Type::Kind;
  switch (k) {
    case K::Tensor: return t.kind() == T::Tensor;
    case K::Int:
    case K::SymInt:
    case K::Layout:
    case K::MemoryFormat: return t.kind() == T::Int;
    case K::Float: return t.kind() == T::Float || t.kind() == T::Int;
    case K::Bool: return t.kind() == T::Bool;
    case K::Str: return t.kind() == T::Str;
    case K::Scalar:
      return t.kind() == T::Int || t.kind() == T::Float || t.kind() == T::Bool || t.kind() == T::Complex ||
             t.kind() == T::Scalar;
    case K::ScalarType: return t.kind() == T::ScalarType;
    case K::Device: return t.kind() == T::Device;
    case K::Generator: return t.kind() == T::Generator;
  }
  return false;
}

}  // namespace

Type type_of_schema(const SchemaType& s) {
  Type t = base_type(s.kind);
  if (s.is_list) t = Type::list(s.element_optional ? Type::optional(t) : t);
  if (s.optional) t = Type::optional(t);
  return t;
}

bool schema_accepts(const SchemaType& s, const Type& t) {
  if (t.kind() == Type::Kind::None) return s.optional;
  if (t.kind() == Type::Kind::Optional) {
    if (!s.optional) return false;
    SchemaType inner = s;
    inner.optional = false;
    return schema_accepts(inner, t.element());
  }
  if (!s.is_list) return base_accepts(s.kind, t);
  if (t.kind() != Type::Kind::List) return false;
  const Type& e = t.element();
  if (e.kind() == Type::Kind::Optional) return s.element_optional && base_accepts(s.kind, e.element());
  if (e.kind() == Type::Kind::None) return s.element_optional;
  // Float lists hold doubles: an int list is no float list (IValue keeps them apart).
  if (s.kind == SchemaType::Kind::Float) return e.kind() == Type::Kind::Float;
  return base_accepts(s.kind, e);
}

bool schema_accepts(const SchemaType& s, const Attribute& a) {
  if (s.is_list && a.kind() == Attribute::Kind::IntList && a.to_int_list().empty()) return true;
  return schema_accepts(s, a.type());
}

}  // namespace kiln::ir
