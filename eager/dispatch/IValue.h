// IValue: one boxed value on the dispatcher's stack (a tensor, a number, a
// list, a dtype, ...). The boxed calling convention passes a Stack of them so
// one function can handle every op (fallbacks such as Capture and profiling).
#pragma once

#include <complex>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "eager/core/ArrayRef.h"
#include "eager/core/DType.h"
#include "eager/core/Device.h"
#include "eager/core/Error.h"
#include "eager/core/GeneratorImpl.h"
#include "eager/core/Scalar.h"
#include "eager/ops/Tensor.h"

namespace kiln {

class IValue {
 public:
  enum class Tag : uint8_t {
    None, Tensor, Double, Int, Bool, String, IntList, DoubleList, BoolList, TensorList, OptionalTensorList, DType,
    Device, Generator, ComplexDouble
  };

  IValue() = default;
  IValue(std::nullopt_t) {}                          // NOLINT
  IValue(Tensor t) : v_(std::move(t)) {}             // NOLINT
  IValue(double d) : v_(d) {}                        // NOLINT
  IValue(int64_t i) : v_(i) {}                       // NOLINT
  IValue(int i) : v_(static_cast<int64_t>(i)) {}     // NOLINT
  IValue(bool b) : v_(b) {}                          // NOLINT
  IValue(std::string s) : v_(std::move(s)) {}        // NOLINT
  IValue(const char* s) : v_(std::string(s)) {}      // NOLINT
  IValue(DimVector l) : v_(std::move(l)) {}          // NOLINT
  IValue(IntArrayRef l) : v_(DimVector(l)) {}        // NOLINT
  IValue(std::vector<double> l) : v_(std::move(l)) {}  // NOLINT
  IValue(std::vector<bool> l) : v_(std::move(l)) {}    // NOLINT
  IValue(std::vector<Tensor> l) : v_(std::move(l)) {}  // NOLINT
  IValue(std::vector<std::optional<Tensor>> l) : v_(std::move(l)) {}  // NOLINT
  IValue(DType t) : v_(t) {}                         // NOLINT
  IValue(Device d) : v_(d) {}                        // NOLINT
  IValue(Generator g) : v_(std::move(g)) {}          // NOLINT
  IValue(std::complex<double> c) : v_(c) {}          // NOLINT
  IValue(const Scalar& s) {                          // NOLINT: stored by its kind
    switch (s.kind()) {
      case Scalar::Kind::Bool: v_ = s.to_bool(); break;
      case Scalar::Kind::Int: v_ = s.to_int64(); break;
      case Scalar::Kind::Double: v_ = s.to_double(); break;
      case Scalar::Kind::Complex: v_ = s.to_complex_double(); break;
    }
  }
  template <typename T>
  IValue(std::optional<T> o) {  // NOLINT
    if (o) *this = IValue(std::move(*o));
  }

  [[nodiscard]] Tag tag() const { return static_cast<Tag>(v_.index()); }
  [[nodiscard]] std::string_view tag_name() const;
  [[nodiscard]] bool is_none() const { return tag() == Tag::None; }
  [[nodiscard]] bool is_tensor() const { return tag() == Tag::Tensor; }
  [[nodiscard]] bool is_scalar() const {
    return tag() == Tag::Double || tag() == Tag::Int || tag() == Tag::Bool || tag() == Tag::ComplexDouble;
  }

  [[nodiscard]] const Tensor& to_tensor() const { return get<Tensor>("Tensor"); }
  [[nodiscard]] Tensor& to_tensor() { return const_cast<Tensor&>(std::as_const(*this).to_tensor()); }
  [[nodiscard]] double to_double() const;  // accepts Int too (an int is a valid float)
  [[nodiscard]] int64_t to_int() const { return get<int64_t>("int"); }
  [[nodiscard]] bool to_bool() const { return get<bool>("bool"); }
  [[nodiscard]] const std::string& to_string() const { return get<std::string>("str"); }
  [[nodiscard]] const DimVector& to_int_list() const { return get<DimVector>("int[]"); }
  [[nodiscard]] const std::vector<double>& to_double_list() const { return get<std::vector<double>>("float[]"); }
  [[nodiscard]] const std::vector<bool>& to_bool_list() const { return get<std::vector<bool>>("bool[]"); }
  [[nodiscard]] const std::vector<Tensor>& to_tensor_list() const { return get<std::vector<Tensor>>("Tensor[]"); }
  [[nodiscard]] const std::vector<std::optional<Tensor>>& to_optional_tensor_list() const {
    return get<std::vector<std::optional<Tensor>>>("Tensor?[]");
  }
  [[nodiscard]] DType to_dtype() const { return get<DType>("ScalarType"); }
  [[nodiscard]] Device to_device() const { return get<Device>("Device"); }
  [[nodiscard]] const Generator& to_generator() const { return get<Generator>("Generator"); }
  [[nodiscard]] std::complex<double> to_complex_double() const { return get<std::complex<double>>("complex"); }
  [[nodiscard]] Scalar to_scalar() const;

 private:
  template <typename T>
  const T& get(const char* expected) const {
    const T* p = std::get_if<T>(&v_);
    KILN_CHECK(p != nullptr, "IValue: expected ", expected, " but got ", tag_name());
    return *p;
  }

  // Order matches Tag.
  std::variant<std::monostate, Tensor, double, int64_t, bool, std::string, DimVector, std::vector<double>,
               std::vector<bool>, std::vector<Tensor>, std::vector<std::optional<Tensor>>, DType, Device, Generator,
               std::complex<double>>
      v_;
};

using Stack = std::vector<IValue>;

std::ostream& operator<<(std::ostream& os, const IValue& v);

}  // namespace kiln
