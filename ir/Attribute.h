// Attribute: a literal payload on a node (a constant's value, or an op
// argument given inline): None, bool, int, float, complex, str, int/float/bool
// lists, a dtype or a device.
#pragma once

#include <complex>
#include <cstdint>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "eager/core/DType.h"
#include "eager/core/Device.h"
#include "eager/core/Scalar.h"
#include "ir/Type.h"

namespace kiln {
class IValue;
}

namespace kiln::ir {

/// Note [Empty lists are int lists]
/// An empty float or bool list is stored as an empty int list, so `[]` has
/// one meaning in the text form and round-trips exactly; the verifier accepts
/// an empty int list wherever any list of numbers is expected.
class Attribute {
 public:
  enum class Kind : uint8_t { None, Bool, Int, Float, Complex, Str, IntList, FloatList, BoolList, DType, Device };

  Attribute() = default;  // None
  static Attribute none() { return Attribute(); }
  static Attribute of_bool(bool v) { return Attribute(V(v)); }
  static Attribute of_int(int64_t v) { return Attribute(V(v)); }
  static Attribute of_float(double v) { return Attribute(V(v)); }
  static Attribute of_complex(std::complex<double> v) { return Attribute(V(v)); }
  static Attribute of_str(std::string v) { return Attribute(V(std::move(v))); }
  static Attribute of_int_list(std::vector<int64_t> v) { return Attribute(V(std::move(v))); }
  static Attribute of_float_list(std::vector<double> v);  // See Note [Empty lists are int lists]
  static Attribute of_bool_list(std::vector<bool> v);     // See Note [Empty lists are int lists]
  static Attribute of_dtype(DType v) { return Attribute(V(v)); }
  static Attribute of_device(Device v) { return Attribute(V(v)); }
  /// A Scalar keeps its kind: bool, int, float or complex.
  static Attribute of_scalar(const Scalar& s);
  /// The literal an IValue holds; ValueError for tensors, generators and
  /// tensor lists, which have no literal form.
  static Attribute of_ivalue(const IValue& v);

  [[nodiscard]] Kind kind() const { return static_cast<Kind>(v_.index()); }
  [[nodiscard]] bool is_none() const { return kind() == Kind::None; }
  [[nodiscard]] bool to_bool() const { return get<bool>(); }
  [[nodiscard]] int64_t to_int() const { return get<int64_t>(); }
  [[nodiscard]] double to_float() const { return get<double>(); }
  [[nodiscard]] std::complex<double> to_complex() const { return get<std::complex<double>>(); }
  [[nodiscard]] const std::string& to_str() const { return get<std::string>(); }
  [[nodiscard]] const std::vector<int64_t>& to_int_list() const { return get<std::vector<int64_t>>(); }
  [[nodiscard]] const std::vector<double>& to_float_list() const { return get<std::vector<double>>(); }
  [[nodiscard]] const std::vector<bool>& to_bool_list() const { return get<std::vector<bool>>(); }
  [[nodiscard]] DType to_dtype() const { return get<DType>(); }
  [[nodiscard]] Device to_device() const { return get<Device>(); }

  /// The boxed value an op receives for this literal.
  [[nodiscard]] IValue to_ivalue() const;
  /// The type of a value holding this literal (a constant's output type).
  [[nodiscard]] Type type() const;
  /// The text form: None, True, 3, -2.5, 1.0, inf, nan, complex(1.0, -2.0),
  /// "a\"b", [1, 2], [0.5, 1.0], [True, False], float32, cuda:0.
  [[nodiscard]] std::string str() const;

  bool operator==(const Attribute& o) const;

 private:
  using V = std::variant<std::monostate, bool, int64_t, double, std::complex<double>, std::string,
                         std::vector<int64_t>, std::vector<double>, std::vector<bool>, DType, Device>;
  explicit Attribute(V v) : v_(std::move(v)) {}
  template <typename T>
  const T& get() const;
  V v_;
};

std::ostream& operator<<(std::ostream& os, const Attribute& a);

/// Shortest text that reads back as the same double: "1.0", "0.1", "1e-05",
/// "inf", "-inf", "nan" (always with a '.', 'e', or a name, so it never reads as an int).
[[nodiscard]] std::string format_float(double v);
/// `"..."` with \" \\ \n \t \r and \xHH escapes for other control bytes.
[[nodiscard]] std::string quote_string(std::string_view s);

}  // namespace kiln::ir
