// SymbolicSize: one dimension of a tensor type, either a concrete extent (3)
// or a named symbol (s0) that stands for a size known only at run time.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <variant>

namespace kiln::ir {

/// A size or stride entry of a TensorType. Symbols are plain names; two
/// dimensions with the same symbol are equal at run time (capture's guards and
/// shape propagation rely on that).
class SymbolicSize {
 public:
  /// A concrete extent; negative extents are rejected with ValueError.
  SymbolicSize(int64_t value);  // NOLINT: sizes read as ints
  /// A named symbol: an identifier ([A-Za-z_][A-Za-z0-9_]*), else ValueError.
  static SymbolicSize symbol(std::string name);

  [[nodiscard]] bool is_concrete() const { return std::holds_alternative<int64_t>(v_); }
  [[nodiscard]] bool is_symbolic() const { return !is_concrete(); }
  /// The extent; RuntimeError for a symbol.
  [[nodiscard]] int64_t value() const;
  /// The symbol's name; RuntimeError for a concrete extent.
  [[nodiscard]] const std::string& name() const;
  /// "3" or "s0".
  [[nodiscard]] std::string str() const;

  bool operator==(const SymbolicSize&) const = default;

 private:
  struct SymbolTag {};
  SymbolicSize(SymbolTag, std::string name) : v_(std::move(name)) {}
  std::variant<int64_t, std::string> v_;
};

std::ostream& operator<<(std::ostream& os, const SymbolicSize& s);

/// True for [A-Za-z_][A-Za-z0-9_]*: symbol and value names use this alphabet.
[[nodiscard]] bool is_identifier(std::string_view s);

}  // namespace kiln::ir
