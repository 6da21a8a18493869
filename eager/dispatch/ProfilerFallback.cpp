// The boxed fallback on DispatchKey::Profiler: one range per op call, with
// the input shapes when asked, around the call below the key.
// See Note [The profiler key costs nothing when off] (ProfilerFallback.h).
#include "eager/dispatch/ProfilerFallback.h"

#include <mutex>

#include "eager/dispatch/Dispatcher.h"

namespace kiln::profiler {

namespace {

/// "kiln::add" for kiln::add.Tensor: torch names op events without the overload.
std::string event_name(const OperatorName& name) { return name.ns + "::" + name.name; }

/// The shape of each argument on top of the stack, in schema order.
std::vector<ArgumentShape> argument_shapes(const FunctionSchema& schema, const Stack& stack) {
  const size_t n = schema.arguments().size();
  std::vector<ArgumentShape> shapes(n);
  const IValue* base = stack.data() + (stack.size() - n);
  for (size_t i = 0; i < n; ++i) {
    const IValue& v = base[i];
    ArgumentShape& s = shapes[i];
    if (v.is_tensor()) {
      s.kind = ArgumentShape::Kind::Tensor;
      const Tensor& t = v.to_tensor();
      if (t.defined()) s.sizes.emplace_back(t.sizes().begin(), t.sizes().end());
    } else if (v.tag() == IValue::Tag::TensorList) {
      s.kind = ArgumentShape::Kind::TensorList;
      for (const Tensor& t : v.to_tensor_list()) s.sizes.emplace_back(t.sizes().begin(), t.sizes().end());
    }
  }
  return shapes;
}

void set_profiler_key(bool on) {
  LocalDispatchKeySet& tls = local_dispatch_key_set();
  tls.included = on ? tls.included.add(DispatchKey::Profiler) : tls.included.remove(DispatchKey::Profiler);
}

void profiler_fallback(void*, const OperatorHandle& op, DispatchKeySet keys, Stack* stack) {
  if (!is_active()) [[unlikely]] {  // the session was stopped on another thread: this one drops the key
    set_profiler_key(false);
    op.redispatch_boxed(keys.below(DispatchKey::Profiler), stack);
    return;
  }
  std::vector<ArgumentShape> shapes;
  if (records_shapes()) shapes = argument_shapes(op.schema(), *stack);
  const RangeHandle range = begin_range(event_name(op.name()), "cpu_op", std::move(shapes));
  try {
    op.redispatch_boxed(keys.below(DispatchKey::Profiler), stack);
  } catch (...) {
    end_range(range);
    throw;
  }
  end_range(range);
}

}  // namespace

void start_profiling(Options options) {
  static std::once_flag once;
  std::call_once(once, [] {
    Dispatcher::singleton().register_fallback(DispatchKey::Profiler, KernelFunction::from_boxed(&profiler_fallback));
  });
  start(options);
  set_profiler_key(true);
}

std::vector<Event> stop_profiling() {
  set_profiler_key(false);
  return stop();
}

}  // namespace kiln::profiler
