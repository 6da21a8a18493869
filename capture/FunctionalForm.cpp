// FunctionalForm: in-place ops recorded out of place, random ops given an
// explicit generator, and the capture::philox_generator / capture::generator_offset ops.
#include "capture/FunctionalForm.h"

#include <mutex>
#include <optional>

#include "eager/kernels/random/Generator.h"
#include "ir/Attribute.h"
#include "ir/Type.h"

namespace kiln::capture {

namespace {

/// The functional variant of in-place op `op` (kiln::add_.Tensor -> kiln::add.Tensor): same
/// arguments and one tensor return; nullopt when there is none.
std::optional<OperatorHandle> functional_variant(const OperatorHandle& op) {
  const OperatorName& name = op.name();
  // fill_.Scalar has no `fill`: full_like(self, fill_value) is its value (zero_ is fill_(0)); the
  // node takes fill_'s arguments by position and full_like's others at their defaults (None).
  if (name.ns == "kiln" && name.name == "fill_" && name.overload == "Scalar") {
    return Dispatcher::singleton().find_op("kiln::full_like", "");
  }
  if (name.name.size() < 2 || name.name.back() != '_' || name.name[name.name.size() - 2] == '_') return std::nullopt;
  const std::string base = name.ns + "::" + name.name.substr(0, name.name.size() - 1);
  std::optional<OperatorHandle> f = Dispatcher::singleton().find_op(base, name.overload);
  if (!f || !f->entry().has_schema() || f->entry().has_tag("random")) return std::nullopt;
  const auto& a = op.schema().arguments();
  const auto& b = f->schema().arguments();
  if (a.size() != b.size() || f->schema().returns().size() != 1) return std::nullopt;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || !(a[i].type == b[i].type) || (i > 0 && b[i].alias && b[i].alias->is_write)) {
      return std::nullopt;
    }
  }
  return f;
}

/// Whether `op` writes its first argument in place (tag `inplace`, `self` annotated (a!)).
bool writes_self(const OperatorHandle& op) {
  const auto& args = op.schema().arguments();
  return !args.empty() && args[0].alias && args[0].alias->is_write && op.entry().has_tag("inplace");
}

/// capture::philox_generator(int seed, int offset, int relative_offset) -> Generator: a fresh CPU
/// generator at `seed` (its bits, as the graph's int input carries them) and offset + relative_offset.
void philox_generator_kernel(void*, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  const int64_t relative = stack->back().to_int();
  stack->pop_back();
  const int64_t offset = stack->back().to_int();
  stack->pop_back();
  const int64_t seed = stack->back().to_int();
  stack->pop_back();
  Generator gen = make_cpu_generator(static_cast<uint64_t>(seed));
  gen->set_offset(static_cast<uint64_t>(offset) + static_cast<uint64_t>(relative));
  stack->emplace_back(std::move(gen));
}

/// capture::generator_offset(Generator generator, Tensor after) -> int: where `generator` stands now
/// (`after`, the result of the op that drew from it, only orders the read).
void generator_offset_kernel(void*, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  stack->pop_back();
  const Generator gen = stack->back().to_generator();
  stack->pop_back();
  stack->emplace_back(static_cast<int64_t>(gen->offset()));
}

}  // namespace

OperatorHandle recorded_op(CaptureSession& s, const OperatorHandle& op, const Stack& stack) {
  const auto& args = op.schema().arguments();
  const size_t base = stack.size() - args.size();
  for (size_t i = 0; i < args.size(); ++i) {
    const IValue& v = stack[base + i];
    if (!v.is_tensor() || !args[i].alias || !args[i].alias->is_write) continue;
    const Tensor& t = v.to_tensor();
    if (s.find(t) == nullptr) continue;  // build_node refuses it
    const bool aliased = s.is_aliased(t);
    if (i == 0 && (!aliased || (s.functionalizes_aliased_inputs() && s.is_declared_input(t))) && writes_self(op)) {
      if (std::optional<OperatorHandle> f = functional_variant(op)) {
        if (aliased) s.mark_aliases_stale(t);  // Note [Writing an aliased input]
        return *f;
      }
    }
    if (aliased || s.writes_input_storage(t)) {
      s.mark_impure("op " + op.name().str() + " writes in place into " +
                    (aliased ? std::string("a tensor other recorded tensors alias") : std::string("an input")));
    }
  }
  return op;
}

ir::Value* default_generator(CaptureSession& s, const OperatorHandle& op, const Stack& stack, std::string* why) {
  const auto& args = op.schema().arguments();
  const size_t base = stack.size() - args.size();
  for (size_t i = 0; i < args.size(); ++i) {
    const IValue& v = stack[base + i];
    const bool off_cpu = (v.is_tensor() && v.to_tensor().defined() && !v.to_tensor().device().is_cpu()) ||
                         (v.tag() == IValue::Tag::Device && !v.to_device().is_cpu());
    if (off_cpu) {
      *why = "a random op off the CPU (capture records only the default CPU generator)";
      return nullptr;
    }
  }
  const Generator& gen = default_cpu_generator();
  return s.default_generator_at(gen->current_seed(), gen->offset());
}

void note_random_op_ran(CaptureSession& s) { s.note_generator_end(default_cpu_generator()->offset()); }

void ensure_philox_generator_op() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dispatcher& d = Dispatcher::singleton();
    const OperatorHandle op = d.register_def(
        FunctionSchema::parse("capture::philox_generator(int seed, int offset, int relative_offset) -> Generator"), {});
    // No tensor arguments: a call dispatches on the thread's default BackendSelect key.
    d.register_impl(op.name(), DispatchKey::BackendSelect, KernelFunction::from_boxed(&philox_generator_kernel));
    const OperatorHandle offset = d.register_def(
        FunctionSchema::parse("capture::generator_offset(Generator generator, Tensor after) -> int"), {});
    for (DispatchKey k : {DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::Meta, DispatchKey::Autograd}) {
      d.register_impl(offset.name(), k, KernelFunction::from_boxed(&generator_offset_kernel));
    }
  });
}

namespace {

// Registered when the library loads, so graphs that use it parse in any process.
[[maybe_unused]] const bool philox_generator_registered = [] {
  ensure_philox_generator_op();
  return true;
}();

}  // namespace

}  // namespace kiln::capture
