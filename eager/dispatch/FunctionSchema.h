// FunctionSchema: an operator's signature in PyTorch's schema language,
//   "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
// parsed once at registration and printed back unchanged (they round-trip).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// An argument or return type: a base kind, optionally a list (with a fixed
/// size for `int[2]`), optionally nullable (`Tensor?`, `int[]?`), and list
/// elements may be nullable (`Tensor?[]`).
struct SchemaType {
  enum class Kind : uint8_t {
    Tensor, Int, SymInt, Float, Bool, Str, Scalar, ScalarType, Device, Layout, MemoryFormat, Generator
  };
  Kind kind = Kind::Tensor;
  bool is_list = false;
  std::optional<int64_t> fixed_size;  // int[2]
  bool element_optional = false;      // Tensor?[]
  bool optional = false;              // T?

  [[nodiscard]] bool is_tensor_like() const { return kind == Kind::Tensor; }
  [[nodiscard]] std::string str() const;
  bool operator==(const SchemaType&) const = default;
};

/// `Tensor(a!)`: the value aliases set `a`; `!` means the op writes to it.
struct AliasInfo {
  std::string set;
  bool is_write = false;
  bool operator==(const AliasInfo&) const = default;
};

struct SchemaArgument {
  std::string name;
  SchemaType type;
  std::optional<AliasInfo> alias;
  std::optional<std::string> default_value;  // kept as written: "1", "None", "[0, 1]", "\"mean\""
  bool kwarg_only = false;

  [[nodiscard]] bool is_out() const { return kwarg_only && alias && alias->is_write; }
  bool operator==(const SchemaArgument&) const = default;
};

struct OperatorName {
  std::string ns;        // "kiln"
  std::string name;      // "add"
  std::string overload;  // "Tensor" (may be empty)

  /// "kiln::add.Tensor" (or "kiln::add" without an overload).
  [[nodiscard]] std::string str() const;
  bool operator==(const OperatorName&) const = default;
};

class FunctionSchema {
 public:
  /// Parses `schema`; the namespace is taken from a "ns::" prefix or from
  /// `default_ns`. RuntimeError naming the column of the first problem.
  static FunctionSchema parse(std::string_view schema, std::string_view default_ns = "kiln");

  [[nodiscard]] const OperatorName& name() const { return name_; }
  [[nodiscard]] const std::vector<SchemaArgument>& arguments() const { return arguments_; }
  [[nodiscard]] const std::vector<SchemaArgument>& returns() const { return returns_; }
  /// True for in-place ops (first argument written to, name ends in '_').
  [[nodiscard]] bool is_inplace() const;
  /// True when some keyword-only argument is written to (an out= variant).
  [[nodiscard]] bool is_out() const;
  /// Indices of the arguments that carry tensors (Tensor, Tensor?, Tensor[], Tensor?[]).
  [[nodiscard]] const std::vector<size_t>& tensor_argument_indices() const { return tensor_args_; }

  /// The schema in canonical form, without the namespace:
  /// "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor".
  [[nodiscard]] std::string str() const;

 private:
  FunctionSchema(OperatorName name, std::vector<SchemaArgument> arguments, std::vector<SchemaArgument> returns);

  OperatorName name_;
  std::vector<SchemaArgument> arguments_;
  std::vector<SchemaArgument> returns_;
  std::vector<size_t> tensor_args_;
};

std::ostream& operator<<(std::ostream& os, const FunctionSchema& s);

}  // namespace kiln
