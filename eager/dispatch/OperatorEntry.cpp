// Kernel registration per key and dispatch-table resolution.
// See Note [How a call finds its kernel] (Dispatcher.h).
#include "eager/dispatch/OperatorEntry.h"

#include <algorithm>
#include <sstream>

#include "eager/core/Error.h"

namespace kiln {

const FunctionSchema& OperatorEntry::schema() const {
  KILN_CHECK(schema_.has_value(), "operator ", name_.str(),
             " has kernels but no schema; define it with KILN_LIBRARY / Library::def first");
  return *schema_;
}

bool OperatorEntry::has_tag(std::string_view tag) const {
  return std::find(tags_.begin(), tags_.end(), tag) != tags_.end();
}

void OperatorEntry::set_schema(FunctionSchema schema, std::vector<std::string> tags) {
  KILN_CHECK(!schema_.has_value(), "operator ", name_.str(), " is already defined (as ", schema_->str(),
             "); define each operator once");
  schema_ = std::move(schema);
  tags_ = std::move(tags);
}

void OperatorEntry::clear_schema() {
  schema_.reset();
  tags_.clear();
}

void OperatorEntry::set_kernel(DispatchKey key, KernelFunction k) {
  if (const std::type_info* sig = k.signature()) {
    KILN_CHECK(cpp_signature_ == nullptr || *cpp_signature_ == *sig, "kernel for ", name_.str(), " at key ",
               dispatch_key_name(key), " has C++ signature ", sig->name(),
               " but the operator's other kernels have ", cpp_signature_->name());
    cpp_signature_ = sig;
  }
  if (key == DispatchKey::Undefined) {
    composite_ = k;
  } else {
    kernels_[static_cast<size_t>(key)] = k;
  }
}

void OperatorEntry::remove_kernel(DispatchKey key) {
  if (key == DispatchKey::Undefined) {
    composite_ = KernelFunction();
  } else {
    kernels_[static_cast<size_t>(key)] = KernelFunction();
  }
  const bool any_unboxed = composite_.has_unboxed() ||
                           std::any_of(kernels_.begin(), kernels_.end(), [](const auto& k) { return k.has_unboxed(); });
  if (!any_unboxed) cpp_signature_ = nullptr;
}

void OperatorEntry::update_dispatch_table(const std::array<KernelFunction, kNumDispatchKeys>& fallbacks) {
  fallthrough_keys_ = DispatchKeySet();
  for (int i = 0; i < kNumDispatchKeys; ++i) {
    const auto key = static_cast<DispatchKey>(i);
    const KernelFunction* resolved = &kernels_[i];
    if (resolved->kind() == KernelFunction::Kind::Missing && composite_.is_kernel() && kCompositeKeys.has(key)) {
      resolved = &composite_;
    }
    if (resolved->kind() == KernelFunction::Kind::Missing) resolved = &fallbacks[i];
    dispatch_table_[i] = *resolved;
    if (resolved->is_fallthrough()) fallthrough_keys_ = fallthrough_keys_.add(key);
  }
}

void OperatorEntry::report_missing_kernel(DispatchKey key) const {
  std::ostringstream available;
  bool first = true;
  for (int i = 0; i < kNumDispatchKeys; ++i) {
    if (kernels_[i].is_kernel()) {
      available << (first ? "" : ", ") << dispatch_key_name(static_cast<DispatchKey>(i));
      first = false;
    }
  }
  if (composite_.is_kernel()) available << (first ? "" : ", ") << "CompositeImplicit";
  const std::string op = name_.str();
  if (key == DispatchKey::Undefined) {
    KILN_FAIL(NotImplemented, "There were no tensor arguments to this function (e.g., you passed an empty list of "
              "Tensors), but no fallback function is registered for schema ", op,
              ". This usually means that this function requires a non-empty list of Tensors. Available functions "
              "are [", available.str(), "]");
  }
  // Note [Meta kernels] (tools/opgen/README.md): an op whose output shape depends on its data has none.
  KILN_CHECK_NOT_IMPLEMENTED(key != DispatchKey::Meta || !has_tag("dynamic_output_shape"), op,
                             ": attempted to run this operator with Meta tensors, but its output's shape depends on "
                             "the input's data (tag dynamic_output_shape), so it has no meta implementation");
  KILN_FAIL(NotImplemented, "Could not run '", op, "' with arguments from the '", dispatch_key_name(key),
            "' backend. '", op, "' is only available for these backends: [", available.str(), "].");
}

}  // namespace kiln
