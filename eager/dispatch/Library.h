// The Library API: how C++ code defines operators and registers kernels.
//
//   KILN_LIBRARY(myns, m) { m.def("foo(Tensor self, int n=1) -> Tensor"); }
//   KILN_LIBRARY_IMPL(myns, CPU, m) { m.impl("foo", &foo_cpu); }
//
// A Library undoes its registrations when destroyed, so tests and Python
// custom ops can define an op, drop it, and define it again.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eager/dispatch/Dispatcher.h"

namespace kiln {

class Library {
 public:
  enum class Kind { Def, Impl, Fragment };

  /// `ns` "_" with Kind::Impl registers fallbacks for `key` (see fallback()).
  Library(Kind kind, std::string ns, std::optional<DispatchKey> key, const char* file = "", int line = 0);
  ~Library();
  Library(Library&&) noexcept;
  Library& operator=(Library&&) = delete;
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  /// Defines an operator from its schema ("name.overload(...) -> ..."), in this
  /// library's namespace unless the schema names one. Tags: "pointwise", ...
  Library& def(std::string_view schema, std::vector<std::string> tags = {});
  /// Defines an operator and gives it a CompositeImplicit kernel.
  template <typename Func>
  Library& def(std::string_view schema, Func* composite) {
    def(schema);
    return impl_kernel(schema_name(schema), DispatchKey::Undefined, KernelFunction::from_function(composite));
  }

  /// Registers `fn` for "name" or "name.overload" at this library's key
  /// (KILN_LIBRARY_IMPL) or, in a Def/Fragment library, as the
  /// CompositeImplicit kernel. Checks the C++ signature against the schema
  /// when the op is already defined.
  template <typename Func>
  Library& impl(std::string_view name, Func* fn) {
    return impl_kernel(name, key_.value_or(DispatchKey::Undefined), KernelFunction::from_function(fn),
                       &check_signature<Func>);
  }
  template <typename Func>
  Library& impl(std::string_view name, DispatchKey key, Func* fn) {
    return impl_kernel(name, key, KernelFunction::from_function(fn), &check_signature<Func>);
  }
  /// Registers a prepared kernel (boxed, fallthrough, ...). key Undefined = composite.
  Library& impl_kernel(std::string_view name, DispatchKey key, KernelFunction kernel,
                       void (*check)(const FunctionSchema&) = nullptr);

  /// Makes `kernel` (usually boxed) serve every op at this library's key.
  Library& fallback(KernelFunction kernel);

  [[nodiscard]] const std::string& ns() const { return ns_; }

 private:
  /// "foo.bar(...) -> ..." -> "foo.bar"
  static std::string schema_name(std::string_view schema);
  OperatorName resolve_name(std::string_view name) const;

  /// RuntimeError when a C++ kernel's parameter count or tensor positions
  /// disagree with the declared schema.
  template <typename Func>
  static void check_signature(const FunctionSchema& schema);
  static void check_signature_shape(const FunctionSchema& schema, const std::vector<bool>& cpp_is_tensor,
                                    const char* cpp_signature);

  Kind kind_;
  std::string ns_;
  std::optional<DispatchKey> key_;
  std::string where_;  // "file:line" for error messages
  std::vector<std::function<void()>> undo_;
};

namespace detail {

template <typename T>
constexpr bool is_tensor_param_v = std::is_same_v<std::decay_t<T>, Tensor> ||
                                   std::is_same_v<std::decay_t<T>, std::optional<Tensor>> ||
                                   std::is_same_v<std::decay_t<T>, TensorList> ||
                                   std::is_same_v<std::decay_t<T>, OptionalTensorList>;

template <typename Sig>
struct TensorParams;
template <typename Ret, typename... Args>
struct TensorParams<Ret(Args...)> {
  static std::vector<bool> get() { return {is_tensor_param_v<Args>...}; }
};

/// Runs a library's init function at load time.
struct LibraryInit {
  LibraryInit(Library::Kind kind, void (*init)(Library&), const char* ns, std::optional<DispatchKey> key,
              const char* file, int line)
      : lib(kind, ns, key, file, line) {
    init(lib);
  }
  Library lib;
};

}  // namespace detail

template <typename Func>
void Library::check_signature(const FunctionSchema& schema) {
  using Sig = typename detail::FunctionTraits<Func>::signature;
  check_signature_shape(schema, detail::TensorParams<Sig>::get(), typeid(Sig).name());
}

}  // namespace kiln

#define KILN_CONCAT_INNER_(a, b) a##b
#define KILN_CONCAT_(a, b) KILN_CONCAT_INNER_(a, b)
#define KILN_UNIQUE_(prefix) KILN_CONCAT_(prefix, __COUNTER__)

/// Defines the operators of namespace `ns` (one KILN_LIBRARY per namespace;
/// use KILN_LIBRARY_FRAGMENT for more).
#define KILN_LIBRARY(ns, m) KILN_LIBRARY_KIND_(::kiln::Library::Kind::Def, ns, std::nullopt, m, KILN_UNIQUE_(kiln_lib_))
#define KILN_LIBRARY_FRAGMENT(ns, m) \
  KILN_LIBRARY_KIND_(::kiln::Library::Kind::Fragment, ns, std::nullopt, m, KILN_UNIQUE_(kiln_lib_))
/// Registers kernels of namespace `ns` at dispatch key `key` (CPU, CUDA, Autograd, ...).
#define KILN_LIBRARY_IMPL(ns, key, m) \
  KILN_LIBRARY_KIND_(::kiln::Library::Kind::Impl, ns, ::kiln::DispatchKey::key, m, KILN_UNIQUE_(kiln_lib_))

#define KILN_LIBRARY_KIND_(kind, ns, key, m, uid)                                                        \
  static void KILN_CONCAT_(uid, _init)(::kiln::Library&);                                               \
  static const ::kiln::detail::LibraryInit KILN_CONCAT_(uid, _static)(kind, &KILN_CONCAT_(uid, _init), #ns, \
                                                                      key, __FILE__, __LINE__);           \
  void KILN_CONCAT_(uid, _init)(::kiln::Library & m)
