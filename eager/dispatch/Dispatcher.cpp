// The operator registry and the boxed call path.
#include "eager/dispatch/Dispatcher.h"

#include "eager/core/Error.h"

namespace kiln {

namespace {

std::string qualified(std::string_view qualified_name, std::string_view overload) {
  std::string key(qualified_name);
  if (!overload.empty()) {
    key += '.';
    key += overload;
  }
  return key;
}

}  // namespace

Dispatcher& Dispatcher::singleton() {
  static Dispatcher* instance = new Dispatcher();  // leaked on purpose: see the header
  return *instance;
}

/// Keys that do nothing unless a kernel or a fallback claims them fall through.
KernelFunction Dispatcher::default_fallback(DispatchKey key) {
  constexpr DispatchKeySet kFallthroughByDefault{DispatchKey::BackendSelect, DispatchKey::Capture,
                                                 DispatchKey::Profiler, DispatchKey::TestLow,
                                                 DispatchKey::TestHigh};
  return kFallthroughByDefault.has(key) ? KernelFunction::fallthrough() : KernelFunction();
}

Dispatcher::Dispatcher() {
  for (int i = 0; i < kNumDispatchKeys; ++i) fallbacks_[i] = default_fallback(static_cast<DispatchKey>(i));
}

OperatorEntry& Dispatcher::entry_for(const OperatorName& name) {
  const std::string key = name.str();
  if (auto it = by_name_.find(key); it != by_name_.end()) return *it->second;
  OperatorEntry& entry = entries_.emplace_back(name);
  entry.update_dispatch_table(fallbacks_);
  by_name_.emplace(key, &entry);
  by_base_name_[name.ns + "::" + name.name].push_back(&entry);
  return entry;
}

OperatorEntry* Dispatcher::find_entry(std::string_view qualified_name, std::string_view overload) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_name_.find(qualified(qualified_name, overload));
  return it == by_name_.end() ? nullptr : it->second;
}

std::optional<OperatorHandle> Dispatcher::find_op(std::string_view qualified_name, std::string_view overload) {
  OperatorEntry* e = find_entry(qualified_name, overload);
  if (e == nullptr) return std::nullopt;
  return OperatorHandle(e);
}

OperatorHandle Dispatcher::find_schema_or_throw(std::string_view qualified_name, std::string_view overload) {
  OperatorEntry* e = find_entry(qualified_name, overload);
  KILN_CHECK(e != nullptr && e->has_schema(), "Could not find schema for ", qualified(qualified_name, overload));
  return OperatorHandle(e);
}

std::vector<OperatorHandle> Dispatcher::find_overloads(std::string_view qualified_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<OperatorHandle> out;
  auto it = by_base_name_.find(std::string(qualified_name));
  if (it == by_base_name_.end()) return out;
  for (OperatorEntry* e : it->second) {
    if (e->has_schema()) out.emplace_back(e);
  }
  return out;
}

std::vector<OperatorHandle> Dispatcher::all_ops() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<OperatorHandle> out;
  for (auto& e : entries_) {
    if (e.has_schema()) out.emplace_back(&e);
  }
  return out;
}

OperatorHandle Dispatcher::register_def(FunctionSchema schema, std::vector<std::string> tags) {
  std::lock_guard<std::mutex> lock(mutex_);
  OperatorEntry& e = entry_for(schema.name());
  e.set_schema(std::move(schema), std::move(tags));
  return OperatorHandle(&e);
}

void Dispatcher::deregister_def(const OperatorName& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  entry_for(name).clear_schema();
}

OperatorHandle Dispatcher::register_impl(const OperatorName& name, DispatchKey key, KernelFunction kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  OperatorEntry& e = entry_for(name);
  e.set_kernel(key, kernel);
  e.update_dispatch_table(fallbacks_);
  return OperatorHandle(&e);
}

void Dispatcher::deregister_impl(const OperatorName& name, DispatchKey key) {
  std::lock_guard<std::mutex> lock(mutex_);
  OperatorEntry& e = entry_for(name);
  e.remove_kernel(key);
  e.update_dispatch_table(fallbacks_);
}

void Dispatcher::register_fallback(DispatchKey key, KernelFunction kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_CHECK(key != DispatchKey::Undefined, "a fallback needs a dispatch key");
  fallbacks_[static_cast<size_t>(key)] = kernel;
  for (auto& e : entries_) e.update_dispatch_table(fallbacks_);
}

void Dispatcher::deregister_fallback(DispatchKey key) {
  std::lock_guard<std::mutex> lock(mutex_);
  fallbacks_[static_cast<size_t>(key)] = default_fallback(key);
  for (auto& e : entries_) e.update_dispatch_table(fallbacks_);
}

DispatchKeySet OperatorHandle::compute_keys_boxed(const Stack& stack) const {
  const FunctionSchema& s = schema();
  const size_t n = s.arguments().size();
  KILN_CHECK(stack.size() >= n, "boxed call of ", name().str(), ": expected ", n, " arguments on the stack, got ",
             stack.size());
  const IValue* base = stack.data() + (stack.size() - n);
  DispatchKeySet keys;
  for (size_t i : s.tensor_argument_indices()) {
    const IValue& v = base[i];
    switch (v.tag()) {
      case IValue::Tag::Tensor:
        keys = keys | boxing::keys_of(v.to_tensor());
        break;
      case IValue::Tag::TensorList:
        keys = keys | boxing::keys_of(TensorList(v.to_tensor_list()));
        break;
      case IValue::Tag::OptionalTensorList:
        keys = keys | boxing::keys_of(OptionalTensorList(v.to_optional_tensor_list()));
        break;
      default:
        break;
    }
  }
  const LocalDispatchKeySet& tls = local_dispatch_key_set();
  return (keys | tls.included) - tls.excluded;
}

void OperatorHandle::call_boxed(Stack* stack) const {
  const DispatchKeySet keys = compute_keys_boxed(*stack);
  kernel_for(keys).call_boxed(*this, keys, stack);
}

void OperatorHandle::redispatch_boxed(DispatchKeySet keys, Stack* stack) const {
  kernel_for(keys).call_boxed(*this, keys, stack);
}

}  // namespace kiln
