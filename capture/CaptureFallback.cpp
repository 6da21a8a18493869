// The boxed fallback on DispatchKey::Capture: records each op that reaches
// the key into the current session's graph, then runs it below Capture.
// See Note [How capture records] (CaptureSession.h).
#include <mutex>

#include "capture/CaptureSession.h"
#include "eager/core/Error.h"
#include "eager/dispatch/Dispatcher.h"
#include "eager/kernels/random/Generator.h"
#include "ir/Attribute.h"
#include "ir/Type.h"

namespace kiln::capture {

namespace {

void run_below_capture(const OperatorHandle& op, DispatchKeySet keys, Stack* stack) {
  ExcludeDispatchKeyGuard no_capture(DispatchKey::Capture);  // a kernel's inner ops are not recorded again
  op.redispatch_boxed(keys.below(DispatchKey::Capture), stack);
}

/// The generator value for a random op on the default generator, or nullptr
/// with `why` set when that generator is not the CPU one.
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

/// The functional variant of in-place op `op` (kiln::add_.Tensor -> kiln::add.Tensor): same
/// arguments and one tensor return; nullopt when there is none.
std::optional<OperatorHandle> functional_variant(const OperatorHandle& op) {
  const OperatorName& name = op.name();
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

/// The op node for the arguments on top of the stack (list nodes for tensor
/// lists are appended on the way), or nullopt with `why` set. `record` is the
/// op the node calls: `op` itself, or its functional variant (same arguments).
/// A random op's generator=None becomes the default generator's value
/// (See Note [Random ops under capture]).
ir::Node* build_node(CaptureSession& s, const OperatorHandle& op, const OperatorHandle& record, const Stack& stack,
                     std::string* why) {
  ir::Graph& g = s.graph();
  const auto& args = op.schema().arguments();
  const size_t base = stack.size() - args.size();
  std::vector<ir::Value*> inputs;
  std::vector<ir::NamedAttribute> attributes;
  for (size_t i = 0; i < args.size(); ++i) {
    const IValue& v = stack[base + i];
    if (v.is_tensor() && args[i].alias && args[i].alias->is_write &&
        (s.find(v.to_tensor()) == nullptr || s.writes_lifted_storage(v.to_tensor()))) {
      *why = "argument '" + args[i].name + "' writes in place into a tensor captured by reference (a global, "
             "closure or Python-made tensor, not an input of the compiled function, or one a kernel made outside "
             "the dispatcher)";
      return nullptr;
    }
    switch (v.tag()) {
      case IValue::Tag::Tensor: inputs.push_back(s.value_for(v.to_tensor())); break;
      case IValue::Tag::TensorList: {
        std::vector<ir::Value*> elements;
        for (const Tensor& t : v.to_tensor_list()) elements.push_back(s.value_for(t));
        inputs.push_back(g.append(g.create_list(std::move(elements), ir::Type::tensor()))->output());
        break;
      }
      case IValue::Tag::OptionalTensorList: {
        std::vector<ir::Value*> elements;
        for (const auto& t : v.to_optional_tensor_list()) {
          elements.push_back(t ? s.value_for(*t) : g.append(g.create_constant(ir::Attribute::none()))->output());
        }
        inputs.push_back(
            g.append(g.create_list(std::move(elements), ir::Type::optional(ir::Type::tensor())))->output());
        break;
      }
      case IValue::Tag::Generator:
        *why = "argument '" + args[i].name + "' is an explicit Generator (capture records only the default one)";
        return nullptr;
      default:
        if (args[i].type.kind == SchemaType::Kind::Generator && v.is_none()) {
          inputs.push_back(default_generator(s, op, stack, why));
          if (inputs.back() == nullptr) return nullptr;
          break;
        }
        attributes.push_back({args[i].name, ir::Attribute::of_ivalue(v)});
        break;
    }
  }
  return g.create_op(record, std::move(inputs), std::move(attributes));
}

/// Types node's outputs from the results on top of the stack and binds the result tensors to them.
void bind_results(CaptureSession& s, ir::Node* node, const Stack& stack, size_t num_returns) {
  ir::Graph& g = s.graph();
  const size_t base = stack.size() - num_returns;
  for (size_t i = 0; i < num_returns; ++i) {
    const IValue& r = stack[base + i];
    ir::Value* out = node->output(i);
    if (r.is_tensor()) {
      if (!r.to_tensor().defined()) continue;
      out->set_type(ir::Type::tensor(ir::TensorType::of(r.to_tensor())));
      s.bind(r.to_tensor(), out);
    } else if (r.tag() == IValue::Tag::TensorList) {
      const auto& list = r.to_tensor_list();
      ir::Node* unpack = g.append(g.create_list_unpack(out, list.size()));
      for (size_t k = 0; k < list.size(); ++k) {
        unpack->output(k)->set_type(ir::Type::tensor(ir::TensorType::of(list[k])));
        s.bind(list[k], unpack->output(k));
      }
    } else if (!r.is_none()) {
      s.mark_broken("op " + node->kind_name() + " returns a " + std::string(r.tag_name()) +
                    " to Python (a value computed from tensor data)");
    }
  }
}

/// The op to record for `op`: its functional variant when `op` writes a
/// tensor in place that nothing else aliases (See Note [In-place ops under
/// capture]), else `op`, noting on the session when keeping it in place makes
/// the body impure.
OperatorHandle recorded_op(CaptureSession& s, const OperatorHandle& op, const Stack& stack) {
  const auto& args = op.schema().arguments();
  const size_t base = stack.size() - args.size();
  for (size_t i = 0; i < args.size(); ++i) {
    const IValue& v = stack[base + i];
    if (!v.is_tensor() || !args[i].alias || !args[i].alias->is_write) continue;
    const Tensor& t = v.to_tensor();
    if (s.find(t) == nullptr) continue;  // build_node refuses it
    const bool aliased = s.is_aliased(t);
    if (i == 0 && !aliased && writes_self(op)) {
      if (std::optional<OperatorHandle> f = functional_variant(op)) return *f;
    }
    if (aliased || s.writes_input_storage(t)) {
      s.mark_impure("op " + op.name().str() + " writes in place into " +
                    (aliased ? std::string("a tensor other recorded tensors alias") : std::string("an input")));
    }
  }
  return op;
}

void capture_fallback(void*, const OperatorHandle& op, DispatchKeySet keys, Stack* stack) {
  CaptureSession* s = current_session();
  if (s == nullptr || s->broken()) {
    run_below_capture(op, keys, stack);
    return;
  }
  const std::string name = op.name().str();
  ir::Node* node = nullptr;
  const bool random = op.entry().has_tag("random");
  try {
    std::string why;
    node = build_node(*s, op, recorded_op(*s, op, *stack), *stack, &why);
    if (node == nullptr) s->mark_broken("op " + name + ": " + why);
  } catch (const std::exception& e) {
    s->mark_broken("op " + name + " cannot be recorded: " + e.what());
    node = nullptr;
  }
  try {
    run_below_capture(op, keys, stack);
  } catch (...) {
    s->mark_broken("op " + name + " raised during capture");
    throw;
  }
  if (random) s->note_generator_end(default_cpu_generator()->offset());
  if (node == nullptr || s->broken()) return;
  s->graph().append(node);
  s->count_op();
  bind_results(*s, node, *stack, op.schema().returns().size());
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

// Registered with the library so graphs that use it parse in any process.
const bool philox_generator_registered = [] {
  Dispatcher& d = Dispatcher::singleton();
  const OperatorHandle op = d.register_def(
      FunctionSchema::parse("capture::philox_generator(int seed, int offset, int relative_offset) -> Generator"), {});
  d.register_impl(op.name(), DispatchKey::BackendSelect, KernelFunction::from_boxed(&philox_generator_kernel));
  return true;
}();

}  // namespace

void ensure_capture_fallback() {
  static std::once_flag once;
  std::call_once(once, [] {
    (void)philox_generator_registered;
    Dispatcher::singleton().register_fallback(DispatchKey::Capture, KernelFunction::from_boxed(&capture_fallback));
  });
}

}  // namespace kiln::capture
