// The Dispatcher: finds an operator by name and routes each call to the
// kernel of the highest dispatch key in play. See Note [Dispatch key order].
#pragma once

#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "eager/dispatch/LocalDispatchKeySet.h"
#include "eager/dispatch/OperatorEntry.h"

namespace kiln {

// Note [How a call finds its kernel]
// ----------------------------------
// keys = (OR of the key sets of the tensor arguments | TLS included) - TLS excluded
//        - the op's fallthrough keys
// kernel = op.dispatch_table[keys.highest()]
// The dispatch table is resolved at registration time, per key: the op's own
// kernel for that key, else its CompositeImplicit kernel (for kCompositeKeys),
// else the key's global boxed fallback, else missing (a clear error). A key
// whose resolution is a fallthrough joins the op's fallthrough mask, so the
// call path is one OR, two subtractions, a count-leading-zeros and an index.
// A kernel that handles its key and wants the rest of the stack calls
// redispatch with the keys below its own (DispatchKeySet::below).

class OperatorHandle {
 public:
  explicit OperatorHandle(OperatorEntry* entry) : entry_(entry) {}

  [[nodiscard]] const FunctionSchema& schema() const { return entry_->schema(); }
  [[nodiscard]] const OperatorName& name() const { return entry_->name(); }
  [[nodiscard]] OperatorEntry& entry() const { return *entry_; }

  /// Boxed call: arguments on the stack in schema order, results pushed back.
  void call_boxed(Stack* stack) const;
  /// Boxed call with explicit keys (for kernels that redispatch boxed).
  void redispatch_boxed(DispatchKeySet keys, Stack* stack) const;

  /// The key set a boxed call with these stack contents would dispatch on.
  [[nodiscard]] DispatchKeySet compute_keys_boxed(const Stack& stack) const;

  template <typename Sig>
  [[nodiscard]] auto typed() const;

  bool operator==(const OperatorHandle& o) const { return entry_ == o.entry_; }

 protected:
  [[nodiscard]] const KernelFunction& kernel_for(DispatchKeySet keys) const {
    keys = keys - entry_->fallthrough_keys();
    if (keys.empty()) [[unlikely]] entry_->report_missing_kernel(DispatchKey::Undefined);
    const DispatchKey k = keys.highest();
    const KernelFunction& kernel = entry_->lookup(k);
    if (!kernel.is_kernel()) [[unlikely]] entry_->report_missing_kernel(k);
    return kernel;
  }

  OperatorEntry* entry_;
};

template <typename Sig>
class TypedOperatorHandle;

/// A handle checked against one C++ signature; call() is the fast path.
template <typename Ret, typename... Args>
class TypedOperatorHandle<Ret(Args...)> : public OperatorHandle {
 public:
  explicit TypedOperatorHandle(OperatorEntry* entry) : OperatorHandle(entry) {}

  Ret call(Args... args) const {
    const LocalDispatchKeySet& tls = local_dispatch_key_set();
    const DispatchKeySet keys = (boxing::keys_of_args(args...) | tls.included) - tls.excluded;
    return kernel_for(keys).template call<Ret, Args...>(*this, keys, std::forward<Args>(args)...);
  }

  /// Dispatches on exactly `keys` (a kernel passes the keys below its own).
  Ret redispatch(DispatchKeySet keys, Args... args) const {
    return kernel_for(keys).template call<Ret, Args...>(*this, keys, std::forward<Args>(args)...);
  }
};

class Dispatcher {
 public:
  /// The process-wide dispatcher (never destroyed, so static registrations
  /// can unwind in any order at exit).
  static Dispatcher& singleton();

  /// The operator "ns::name" with `overload` ("" for none), or nullopt.
  [[nodiscard]] std::optional<OperatorHandle> find_op(std::string_view qualified_name,
                                                       std::string_view overload = "");
  /// Same, but RuntimeError "Could not find schema for kiln::foo.bar" when absent
  /// or when it has no schema.
  [[nodiscard]] OperatorHandle find_schema_or_throw(std::string_view qualified_name,
                                                    std::string_view overload = "");
  /// Every overload of "ns::name" that has a schema, in registration order.
  [[nodiscard]] std::vector<OperatorHandle> find_overloads(std::string_view qualified_name);
  /// Every operator that has a schema.
  [[nodiscard]] std::vector<OperatorHandle> all_ops();

  // Registration (the Library API calls these; see Library.h).
  OperatorHandle register_def(FunctionSchema schema, std::vector<std::string> tags);
  void deregister_def(const OperatorName& name);
  /// key Undefined registers the op's CompositeImplicit kernel.
  OperatorHandle register_impl(const OperatorName& name, DispatchKey key, KernelFunction kernel);
  void deregister_impl(const OperatorName& name, DispatchKey key);
  void register_fallback(DispatchKey key, KernelFunction kernel);
  void deregister_fallback(DispatchKey key);

 private:
  Dispatcher();
  static KernelFunction default_fallback(DispatchKey key);
  OperatorEntry& entry_for(const OperatorName& name);  // creates; caller holds mutex_
  OperatorEntry* find_entry(std::string_view qualified_name, std::string_view overload);

  std::mutex mutex_;
  std::deque<OperatorEntry> entries_;  // stable addresses
  std::unordered_map<std::string, OperatorEntry*> by_name_;  // "ns::name.overload"
  std::unordered_map<std::string, std::vector<OperatorEntry*>> by_base_name_;  // "ns::name"
  std::array<KernelFunction, kNumDispatchKeys> fallbacks_{};
};

template <typename Sig>
auto OperatorHandle::typed() const {
  const std::type_info* sig = entry_->cpp_signature();
  KILN_CHECK(sig == nullptr || *sig == typeid(Sig),
             "Tried to access or call operator ", entry_->name().str(), " with a wrong C++ signature (",
             typeid(Sig).name(), " instead of ", sig ? sig->name() : "?", ")");
  return TypedOperatorHandle<Sig>(entry_);
}

}  // namespace kiln
