// Boxing: converting a kernel's C++ arguments and results to and from IValues
// on a Stack, so a typed kernel can serve boxed callers and a boxed kernel
// can serve typed callers. See Note [Two calling conventions].
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "eager/core/MemoryFormat.h"
#include "eager/dispatch/IValue.h"

namespace kiln {

// TensorList and OptionalTensorList live in eager/ops/Tensor.h (Tensor's methods take them).

// Note [Two calling conventions]
// ------------------------------
// Unboxed: a kernel is a plain C++ function, Ret(Args...), optionally taking
// the DispatchKeySet first so it can redispatch. Typed callers reach it with no
// heap allocation. Boxed: a kernel takes (ctx, op, keys, Stack*), pops its
// arguments and pushes its results; one boxed function can serve every op,
// which is what fallbacks (Capture, profiling, Python custom ops) need.
// KernelFunction stores both when it can: an unboxed kernel gets a generated
// boxed wrapper (this file's templates), and a typed call of a boxed-only
// kernel boxes its arguments on the way in and unboxes the result on the way out.

namespace boxing {

// --- C++ argument -> IValue ---------------------------------------------------

inline IValue to_ivalue(const Tensor& t) { return IValue(t); }
inline IValue to_ivalue(const std::optional<Tensor>& t) { return t ? IValue(*t) : IValue(); }
inline IValue to_ivalue(const Scalar& s) { return IValue(s); }
inline IValue to_ivalue(const std::optional<Scalar>& s) { return s ? IValue(*s) : IValue(); }
inline IValue to_ivalue(int64_t v) { return IValue(v); }
inline IValue to_ivalue(double v) { return IValue(v); }
inline IValue to_ivalue(bool v) { return IValue(v); }
inline IValue to_ivalue(IntArrayRef v) { return IValue(DimVector(v)); }
inline IValue to_ivalue(DType v) { return IValue(v); }
inline IValue to_ivalue(Device v) { return IValue(v); }
inline IValue to_ivalue(const Generator& v) { return IValue(v); }
inline IValue to_ivalue(MemoryFormat v) { return IValue(static_cast<int64_t>(v)); }  // an int, as in PyTorch
inline IValue to_ivalue(std::string_view v) { return IValue(std::string(v)); }
inline IValue to_ivalue(TensorList v) { return IValue(std::vector<Tensor>(v.begin(), v.end())); }
inline IValue to_ivalue(OptionalTensorList v) {
  return IValue(std::vector<std::optional<Tensor>>(v.begin(), v.end()));
}
template <typename T>
IValue to_ivalue(const std::optional<T>& v) {
  return v ? to_ivalue(*v) : IValue();
}

// --- IValue -> C++ argument (views into the stack stay valid for the call) ---

template <typename T>
struct FromIValue;

template <>
struct FromIValue<const Tensor&> {
  static const Tensor& get(IValue& v) { return v.to_tensor(); }
};
template <>
struct FromIValue<const std::optional<Tensor>&> {
  static std::optional<Tensor> get(IValue& v) { return v.is_none() ? std::nullopt : std::optional(v.to_tensor()); }
};
template <>
struct FromIValue<const Scalar&> {
  static Scalar get(IValue& v) { return v.to_scalar(); }
};
template <>
struct FromIValue<const std::optional<Scalar>&> {
  static std::optional<Scalar> get(IValue& v) { return v.is_none() ? std::nullopt : std::optional(v.to_scalar()); }
};
template <>
struct FromIValue<int64_t> {
  static int64_t get(IValue& v) { return v.to_int(); }
};
template <>
struct FromIValue<double> {
  static double get(IValue& v) { return v.to_double(); }
};
template <>
struct FromIValue<bool> {
  static bool get(IValue& v) { return v.to_bool(); }
};
template <>
struct FromIValue<IntArrayRef> {
  static IntArrayRef get(IValue& v) { return v.to_int_list(); }
};
template <>
struct FromIValue<DType> {
  static DType get(IValue& v) { return v.to_dtype(); }
};
template <>
struct FromIValue<Device> {
  static Device get(IValue& v) { return v.to_device(); }
};
template <>
struct FromIValue<std::string_view> {
  static std::string_view get(IValue& v) { return v.to_string(); }
};
template <>
struct FromIValue<TensorList> {
  static TensorList get(IValue& v) { return v.to_tensor_list(); }
};
template <>
struct FromIValue<OptionalTensorList> {
  static OptionalTensorList get(IValue& v) { return v.to_optional_tensor_list(); }
};
template <>
struct FromIValue<MemoryFormat> {
  static MemoryFormat get(IValue& v) {
    const int64_t f = v.to_int();
    KILN_CHECK(f >= 0 && f < kNumMemoryFormats, "IValue: ", f, " is not a MemoryFormat");
    return static_cast<MemoryFormat>(f);
  }
};
template <>
struct FromIValue<const std::optional<Generator>&> {
  static std::optional<Generator> get(IValue& v) {
    return v.is_none() ? std::nullopt : std::optional(v.to_generator());
  }
};
template <typename T>
struct FromIValue<std::optional<T>> {
  static std::optional<T> get(IValue& v) {
    if (v.is_none()) return std::nullopt;
    return FromIValue<T>::get(v);
  }
};

// --- results ------------------------------------------------------------------

template <typename Ret>
struct Returns {
  static void push(Stack& s, Ret&& r) { s.emplace_back(boxing::to_ivalue(r)); }
  static Ret pop(Stack& s) {
    IValue v = std::move(s.back());
    s.pop_back();
    return FromIValue<std::remove_cv_t<Ret>>::get(v);
  }
  static constexpr size_t count = 1;
};
template <>
struct Returns<Tensor> {
  static void push(Stack& s, Tensor&& r) { s.emplace_back(std::move(r)); }
  static Tensor pop(Stack& s) {
    Tensor t = std::move(s.back().to_tensor());
    s.pop_back();
    return t;
  }
  static constexpr size_t count = 1;
};
template <>
struct Returns<Scalar> {
  static void push(Stack& s, Scalar&& r) { s.emplace_back(r); }
  static Scalar pop(Stack& s) {
    Scalar v = s.back().to_scalar();
    s.pop_back();
    return v;
  }
  static constexpr size_t count = 1;
};
template <>
struct Returns<std::vector<Tensor>> {
  static void push(Stack& s, std::vector<Tensor>&& r) { s.emplace_back(std::move(r)); }
  static std::vector<Tensor> pop(Stack& s) {
    std::vector<Tensor> v = s.back().to_tensor_list();
    s.pop_back();
    return v;
  }
  static constexpr size_t count = 1;
};
template <typename... Ts>
struct Returns<std::tuple<Ts...>> {
  static void push(Stack& s, std::tuple<Ts...>&& r) {
    std::apply([&s](auto&&... v) { (s.emplace_back(std::move(v)), ...); }, std::move(r));
  }
  static std::tuple<Ts...> pop(Stack& s) {
    const size_t base = s.size() - sizeof...(Ts);
    auto out = pop_at(s, base, std::index_sequence_for<Ts...>{});
    s.resize(base);
    return out;
  }
  static constexpr size_t count = sizeof...(Ts);

 private:
  template <size_t... I>
  static std::tuple<Ts...> pop_at(Stack& s, size_t base, std::index_sequence<I...>) {
    return std::tuple<Ts...>(std::move(s[base + I].to_tensor())...);
  }
};
template <>
struct Returns<void> {
  static constexpr size_t count = 0;
};

// --- dispatch keys of typed arguments ---------------------------------------

inline DispatchKeySet keys_of(const Tensor& t) { return t.defined() ? t.key_set() : DispatchKeySet(); }
inline DispatchKeySet keys_of(const std::optional<Tensor>& t) {
  return t && t->defined() ? t->key_set() : DispatchKeySet();
}
inline DispatchKeySet keys_of(TensorList l) {
  DispatchKeySet ks;
  for (const Tensor& t : l) ks = ks | keys_of(t);
  return ks;
}
inline DispatchKeySet keys_of(OptionalTensorList l) {
  DispatchKeySet ks;
  for (const auto& t : l) ks = ks | keys_of(t);
  return ks;
}
template <typename T>
DispatchKeySet keys_of(const T&) {
  return DispatchKeySet();
}

template <typename... Args>
DispatchKeySet keys_of_args(const Args&... args) {
  return (DispatchKeySet() | ... | keys_of(args));
}

}  // namespace boxing
}  // namespace kiln
