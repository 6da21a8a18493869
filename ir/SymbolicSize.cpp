// SymbolicSize: concrete or symbolic dimensions.
#include "ir/SymbolicSize.h"

#include "eager/core/Error.h"

namespace kiln::ir {

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

SymbolicSize::SymbolicSize(int64_t value) : v_(value) {
  KILN_CHECK_VALUE(value >= 0, "ir: a tensor dimension must be non-negative, got ", value);
}

SymbolicSize SymbolicSize::symbol(std::string name) {
  KILN_CHECK_VALUE(is_identifier(name), "ir: a size symbol must be an identifier, got '", name, "'");
  return SymbolicSize(SymbolTag{}, std::move(name));
}

int64_t SymbolicSize::value() const {
  KILN_CHECK(is_concrete(), "ir: size ", str(), " is symbolic, not concrete");
  return std::get<int64_t>(v_);
}

const std::string& SymbolicSize::name() const {
  KILN_CHECK(is_symbolic(), "ir: size ", str(), " is concrete, not a symbol");
  return std::get<std::string>(v_);
}

std::string SymbolicSize::str() const {
  return is_concrete() ? std::to_string(std::get<int64_t>(v_)) : std::get<std::string>(v_);
}

std::ostream& operator<<(std::ostream& os, const SymbolicSize& s) { return os << s.str(); }

}  // namespace kiln::ir
