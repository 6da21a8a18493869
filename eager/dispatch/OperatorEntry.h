// OperatorEntry: everything the dispatcher knows about one operator overload:
// its schema, its kernels by dispatch key, and the resolved dispatch table.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <typeinfo>
#include <vector>

#include "eager/dispatch/FunctionSchema.h"
#include "eager/dispatch/KernelFunction.h"

namespace kiln {

/// The keys a CompositeImplicit kernel serves: it runs above Autograd and
/// Capture so they record its parts, and stands in for any backend.
inline constexpr DispatchKeySet kCompositeKeys{DispatchKey::Autograd, DispatchKey::Capture,
                                               DispatchKey::BackendSelect, DispatchKey::CPU, DispatchKey::CUDA,
                                               DispatchKey::Meta};

class OperatorEntry {
 public:
  explicit OperatorEntry(OperatorName name) : name_(std::move(name)) {}

  [[nodiscard]] const OperatorName& name() const { return name_; }
  [[nodiscard]] bool has_schema() const { return schema_.has_value(); }
  /// RuntimeError when the op was only given kernels, never defined.
  [[nodiscard]] const FunctionSchema& schema() const;
  [[nodiscard]] const std::vector<std::string>& tags() const { return tags_; }
  [[nodiscard]] bool has_tag(std::string_view tag) const;

  /// The kernel that serves `key` after resolution (op kernel, composite, fallback).
  [[nodiscard]] const KernelFunction& lookup(DispatchKey key) const {
    return dispatch_table_[static_cast<size_t>(key)];
  }
  /// Keys whose resolved kernel is a fallthrough; dispatch removes them.
  [[nodiscard]] DispatchKeySet fallthrough_keys() const { return fallthrough_keys_; }
  [[nodiscard]] bool has_kernel_for(DispatchKey key) const {
    return kernels_[static_cast<size_t>(key)].is_kernel();
  }
  [[nodiscard]] bool has_composite() const { return composite_.is_kernel(); }
  /// The C++ signature the op's unboxed kernels share, once one is registered.
  [[nodiscard]] const std::type_info* cpp_signature() const { return cpp_signature_; }

  /// NotImplementedError naming the op, the key and the keys that do have kernels.
  [[noreturn]] void report_missing_kernel(DispatchKey key) const;

 private:
  friend class Dispatcher;
  void set_schema(FunctionSchema schema, std::vector<std::string> tags);
  void clear_schema();
  void set_kernel(DispatchKey key, KernelFunction k);  // Undefined = composite
  void remove_kernel(DispatchKey key);
  void update_dispatch_table(const std::array<KernelFunction, kNumDispatchKeys>& fallbacks);

  OperatorName name_;
  std::optional<FunctionSchema> schema_;
  std::vector<std::string> tags_;
  std::array<KernelFunction, kNumDispatchKeys> kernels_{};
  KernelFunction composite_;
  std::array<KernelFunction, kNumDispatchKeys> dispatch_table_{};
  DispatchKeySet fallthrough_keys_;
  const std::type_info* cpp_signature_ = nullptr;
};

}  // namespace kiln
