// KernelFunction: one kernel in an operator's table, callable typed (unboxed)
// and boxed. See Note [Two calling conventions] (Boxing.h).
#pragma once

#include <typeinfo>
#include <utility>

#include "eager/dispatch/Boxing.h"

namespace kiln {

class OperatorHandle;

/// A boxed kernel: pops its arguments from the stack, pushes its results.
using BoxedKernelFn = void (*)(void* ctx, const OperatorHandle& op, DispatchKeySet keys, Stack* stack);

namespace detail {

template <typename F>
struct FunctionTraits;
template <typename Ret, typename... Args>
struct FunctionTraits<Ret(Args...)> {
  using return_type = Ret;
  using signature = Ret(Args...);  // without a leading DispatchKeySet
  static constexpr bool takes_keys = false;
};
template <typename Ret, typename... Args>
struct FunctionTraits<Ret(DispatchKeySet, Args...)> {
  using return_type = Ret;
  using signature = Ret(Args...);
  static constexpr bool takes_keys = true;
};

/// Calls the user's function pointer stored in ctx, with or without the keys.
template <typename Func, typename Ret, typename... Args>
Ret unboxed_trampoline(void* ctx, DispatchKeySet keys, Args... args) {
  auto* fn = reinterpret_cast<Func*>(ctx);
  if constexpr (FunctionTraits<Func>::takes_keys) {
    return fn(keys, std::forward<Args>(args)...);
  } else {
    (void)keys;
    return fn(std::forward<Args>(args)...);
  }
}

template <typename Func, typename Ret, typename... Args>
struct Unboxed {
  static constexpr auto trampoline = &unboxed_trampoline<Func, Ret, Args...>;

  template <size_t... I>
  static Ret call_from_stack(void* ctx, DispatchKeySet keys, IValue* base, std::index_sequence<I...>) {
    return trampoline(ctx, keys, boxing::FromIValue<Args>::get(base[I])...);
  }

  /// The boxed wrapper of an unboxed kernel.
  static void boxed(void* ctx, const OperatorHandle&, DispatchKeySet keys, Stack* stack) {
    constexpr size_t n = sizeof...(Args);
    IValue* base = stack->data() + (stack->size() - n);
    if constexpr (std::is_void_v<Ret>) {
      call_from_stack(ctx, keys, base, std::index_sequence_for<Args...>{});
      stack->resize(stack->size() - n);
    } else {
      Ret result = call_from_stack(ctx, keys, base, std::index_sequence_for<Args...>{});
      stack->resize(stack->size() - n);
      boxing::Returns<Ret>::push(*stack, std::move(result));
    }
  }
};

template <typename Func, typename Sig>
struct MakeUnboxed;
template <typename Func, typename Ret, typename... Args>
struct MakeUnboxed<Func, Ret(Args...)> {
  using type = Unboxed<Func, Ret, Args...>;
};

}  // namespace detail

class KernelFunction {
 public:
  enum class Kind : uint8_t { Missing, Kernel, Fallthrough };

  KernelFunction() = default;

  /// From a C++ function `Ret(Args...)` or `Ret(DispatchKeySet, Args...)`.
  template <typename Func>
  static KernelFunction from_function(Func* fn) {
    using Traits = detail::FunctionTraits<Func>;
    using U = typename detail::MakeUnboxed<Func, typename Traits::signature>::type;
    KernelFunction k;
    k.kind_ = Kind::Kernel;
    k.ctx_ = reinterpret_cast<void*>(fn);
    k.unboxed_ = reinterpret_cast<void*>(U::trampoline);
    k.boxed_ = &U::boxed;
    k.signature_ = &typeid(typename Traits::signature);
    return k;
  }

  /// From a boxed function (serves any op); `ctx` is passed back to it.
  static KernelFunction from_boxed(BoxedKernelFn fn, void* ctx = nullptr) {
    KernelFunction k;
    k.kind_ = Kind::Kernel;
    k.boxed_ = fn;
    k.ctx_ = ctx;
    return k;
  }

  /// Dispatch skips this key and looks further down.
  static KernelFunction fallthrough() {
    KernelFunction k;
    k.kind_ = Kind::Fallthrough;
    return k;
  }

  [[nodiscard]] Kind kind() const { return kind_; }
  [[nodiscard]] bool is_kernel() const { return kind_ == Kind::Kernel; }
  [[nodiscard]] bool is_fallthrough() const { return kind_ == Kind::Fallthrough; }
  [[nodiscard]] bool has_unboxed() const { return unboxed_ != nullptr; }
  /// typeid of Ret(Args...) for unboxed kernels, else nullptr.
  [[nodiscard]] const std::type_info* signature() const { return signature_; }

  /// Typed call; boxes the arguments when the kernel is boxed-only.
  template <typename Ret, typename... Args>
  Ret call(const OperatorHandle& op, DispatchKeySet keys, Args... args) const {
    if (unboxed_ != nullptr) [[likely]] {
      using Tramp = Ret (*)(void*, DispatchKeySet, Args...);
      return reinterpret_cast<Tramp>(unboxed_)(ctx_, keys, std::forward<Args>(args)...);
    }
    Stack stack;
    stack.reserve(sizeof...(Args));
    (stack.emplace_back(boxing::to_ivalue(args)), ...);
    boxed_(ctx_, op, keys, &stack);
    if constexpr (!std::is_void_v<Ret>) return boxing::Returns<Ret>::pop(stack);
  }

  void call_boxed(const OperatorHandle& op, DispatchKeySet keys, Stack* stack) const {
    boxed_(ctx_, op, keys, stack);
  }

 private:
  BoxedKernelFn boxed_ = nullptr;
  void* unboxed_ = nullptr;  // Ret (*)(void* ctx, DispatchKeySet, Args...)
  void* ctx_ = nullptr;
  const std::type_info* signature_ = nullptr;
  Kind kind_ = Kind::Missing;
};

}  // namespace kiln
