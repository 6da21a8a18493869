// A recursive-descent parser for PyTorch's schema language, and its printer.
#include "eager/dispatch/FunctionSchema.h"

#include <cctype>
#include <charconv>
#include <system_error>
#include <sstream>

#include "eager/core/Error.h"

namespace kiln {

namespace {

struct TypeName {
  std::string_view text;
  SchemaType::Kind kind;
};
constexpr TypeName kTypeNames[] = {
    {"Tensor", SchemaType::Kind::Tensor},
    {"int", SchemaType::Kind::Int},
    {"SymInt", SchemaType::Kind::SymInt},
    {"float", SchemaType::Kind::Float},
    {"bool", SchemaType::Kind::Bool},
    {"str", SchemaType::Kind::Str},
    {"Scalar", SchemaType::Kind::Scalar},
    {"ScalarType", SchemaType::Kind::ScalarType},
    {"Device", SchemaType::Kind::Device},
    {"Layout", SchemaType::Kind::Layout},
    {"MemoryFormat", SchemaType::Kind::MemoryFormat},
    {"Generator", SchemaType::Kind::Generator},
};

/// Reads the schema left to right; every error names the column.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : s_(text) {}

  [[noreturn]] void fail(const std::string& what) const {
    KILN_FAIL(Runtime, "invalid schema \"", s_, "\": ", what, " at column ", pos_);
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool at_end() {
    skip_space();
    return pos_ >= s_.size();
  }
  char peek() {
    skip_space();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  bool accept(std::string_view token) {
    skip_space();
    if (s_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  void expect(std::string_view token) {
    if (!accept(token)) fail("expected '" + std::string(token) + "'");
  }
  std::string identifier() {
    skip_space();
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    if (start == pos_) fail("expected a name");
    return std::string(s_.substr(start, pos_ - start));
  }
  /// A default value as written, up to the next top-level ',' or ')'.
  std::string default_value() {
    skip_space();
    const size_t start = pos_;
    int depth = 0;
    bool in_string = false;
    for (; pos_ < s_.size(); ++pos_) {
      const char c = s_[pos_];
      if (in_string) {
        if (c == '"' || c == '\'') in_string = false;
        continue;
      }
      if (c == '"' || c == '\'') in_string = true;
      else if (c == '[' || c == '(') ++depth;
      else if (c == ']' || (c == ')' && depth > 0)) --depth;
      else if (depth == 0 && (c == ',' || c == ')')) break;
    }
    std::string value(s_.substr(start, pos_ - start));
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
    if (value.empty()) fail("expected a default value");
    return value;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

SchemaType parse_type(Cursor& c) {
  const std::string base = c.identifier();
  SchemaType t;
  bool found = false;
  for (const auto& tn : kTypeNames) {
    if (tn.text == base) {
      t.kind = tn.kind;
      found = true;
    }
  }
  if (!found) c.fail("unknown type '" + base + "'");
  if (c.peek() == '?') {
    // `Tensor?[]` (nullable elements) or `Tensor?` (nullable value).
    c.expect("?");
    if (c.accept("[")) {
      t.element_optional = true;
      t.is_list = true;
      c.expect("]");
      if (c.accept("?")) t.optional = true;
      return t;
    }
    t.optional = true;
    return t;
  }
  return t;
}

/// Parses `[N]`, `[]` list suffixes and a trailing `?` after the alias annotation.
void parse_list_suffix(Cursor& c, SchemaType& t) {
  if (t.optional || t.is_list) return;
  if (c.accept("[")) {
    t.is_list = true;
    if (c.peek() != ']') {
      const std::string n = c.identifier();
      for (char ch : n) {
        if (!std::isdigit(static_cast<unsigned char>(ch))) c.fail("list size must be a number");
      }
      // from_chars, not stoll: a size past int64 is the parser's error, not std::out_of_range (found by
      // libFuzzer on fuzz/targets/fuzz_function_schema.cpp)
      int64_t size = 0;
      const auto [end, status] = std::from_chars(n.data(), n.data() + n.size(), size);
      if (status != std::errc() || end != n.data() + n.size()) c.fail("list size is out of range");
      t.fixed_size = size;
    }
    c.expect("]");
  }
  if (c.accept("?")) t.optional = true;
}

std::optional<AliasInfo> parse_alias(Cursor& c) {
  if (c.peek() != '(') return std::nullopt;
  c.expect("(");
  AliasInfo info;
  info.set = c.identifier();
  info.is_write = c.accept("!");
  c.expect(")");
  return info;
}

SchemaArgument parse_argument(Cursor& c, bool is_return) {
  SchemaArgument a;
  a.type = parse_type(c);
  a.alias = parse_alias(c);
  parse_list_suffix(c, a.type);
  if (is_return) {
    const char next = c.peek();
    if (next != ',' && next != ')' && next != '\0') a.name = c.identifier();
  } else {
    a.name = c.identifier();
  }
  if (!is_return && c.accept("=")) a.default_value = c.default_value();
  return a;
}

std::string type_with_alias(const SchemaArgument& a) {
  // Alias annotations sit between the base type and list/optional suffixes:
  // Tensor(a!), Tensor(a!)[], Tensor(a)?.
  std::string base;
  for (const auto& tn : kTypeNames) {
    if (tn.kind == a.type.kind) base = std::string(tn.text);
  }
  std::string out = base;
  if (a.type.element_optional) {
    out += "?[]";
    if (a.type.optional) out += "?";
    return out;
  }
  if (a.alias) {
    out += '(';
    out += a.alias->set;
    if (a.alias->is_write) out += '!';
    out += ')';
  }
  if (a.type.is_list) {
    out += '[';
    if (a.type.fixed_size) out += std::to_string(*a.type.fixed_size);
    out += ']';
  }
  if (a.type.optional) out += "?";
  return out;
}

}  // namespace

std::string SchemaType::str() const {
  SchemaArgument a;
  a.type = *this;
  return type_with_alias(a);
}

std::string OperatorName::str() const {
  std::string s = ns + "::" + name;
  if (!overload.empty()) s += "." + overload;
  return s;
}

FunctionSchema::FunctionSchema(OperatorName name, std::vector<SchemaArgument> arguments,
                               std::vector<SchemaArgument> returns)
    : name_(std::move(name)), arguments_(std::move(arguments)), returns_(std::move(returns)) {
  for (size_t i = 0; i < arguments_.size(); ++i) {
    if (arguments_[i].type.kind == SchemaType::Kind::Tensor) tensor_args_.push_back(i);
  }
}

FunctionSchema FunctionSchema::parse(std::string_view schema, std::string_view default_ns) {
  Cursor c(schema);
  OperatorName name;
  std::string first = c.identifier();
  if (c.accept("::")) {
    name.ns = std::move(first);
    name.name = c.identifier();
  } else {
    name.ns = std::string(default_ns);
    name.name = std::move(first);
  }
  if (c.accept(".")) name.overload = c.identifier();

  std::vector<SchemaArgument> args;
  c.expect("(");
  bool kwarg_only = false;
  if (!c.accept(")")) {
    do {
      if (c.accept("*")) {
        if (kwarg_only) c.fail("'*' appears twice");
        kwarg_only = true;
        continue;
      }
      SchemaArgument a = parse_argument(c, /*is_return=*/false);
      a.kwarg_only = kwarg_only;
      for (const auto& prev : args) {
        if (prev.name == a.name) c.fail("duplicate argument name '" + a.name + "'");
      }
      args.push_back(std::move(a));
    } while (c.accept(","));
    c.expect(")");
  }

  std::vector<SchemaArgument> returns;
  c.expect("->");
  if (c.accept("(")) {
    if (!c.accept(")")) {
      do {
        returns.push_back(parse_argument(c, /*is_return=*/true));
      } while (c.accept(","));
      c.expect(")");
    }
  } else {
    returns.push_back(parse_argument(c, /*is_return=*/true));
  }
  if (!c.at_end()) c.fail("unexpected text after the returns");
  return FunctionSchema(std::move(name), std::move(args), std::move(returns));
}

bool FunctionSchema::is_inplace() const {
  return !name_.name.empty() && name_.name.back() == '_' && !arguments_.empty() && arguments_[0].alias &&
         arguments_[0].alias->is_write;
}

bool FunctionSchema::is_out() const {
  for (const auto& a : arguments_) {
    if (a.is_out()) return true;
  }
  return false;
}

std::string FunctionSchema::str() const {
  std::ostringstream os;
  os << name_.name;
  if (!name_.overload.empty()) os << '.' << name_.overload;
  os << '(';
  bool star_written = false;
  for (size_t i = 0; i < arguments_.size(); ++i) {
    const auto& a = arguments_[i];
    if (i) os << ", ";
    if (a.kwarg_only && !star_written) {
      os << "*, ";
      star_written = true;
    }
    os << type_with_alias(a) << ' ' << a.name;
    if (a.default_value) os << '=' << *a.default_value;
  }
  os << ") -> ";
  const bool parens = returns_.size() != 1 || !returns_[0].name.empty();
  if (parens) os << '(';
  for (size_t i = 0; i < returns_.size(); ++i) {
    if (i) os << ", ";
    os << type_with_alias(returns_[i]);
    if (!returns_[i].name.empty()) os << ' ' << returns_[i].name;
  }
  if (parens) os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const FunctionSchema& s) { return os << s.str(); }

}  // namespace kiln
