// The boxed fallback on DispatchKey::Capture: records each op that reaches
// the key into the current session's graph, then runs it below Capture.
// See Note [How capture records] (CaptureSession.h).
#include <mutex>

#include "capture/CaptureSession.h"
#include "capture/FunctionalForm.h"
#include "eager/autograd/AccumulateGrad.h"
#include "eager/core/Error.h"
#include "eager/dispatch/Dispatcher.h"
#include "ir/Attribute.h"
#include "ir/Type.h"

namespace kiln::capture {

namespace {

void run_below_capture(const OperatorHandle& op, DispatchKeySet keys, Stack* stack) {
  ExcludeDispatchKeyGuard no_capture(DispatchKey::Capture);  // a kernel's inner ops are not recorded again
  op.redispatch_boxed(keys.below(DispatchKey::Capture), stack);
}

/// Whether an argument of this schema type may carry a size read in Python: a SymInt (or a SymInt list or
/// optional), a Scalar, or an int list named like a size.
bool takes_sizes(const SchemaArgument& a) {
  using K = SchemaType::Kind;
  if (a.type.kind == K::SymInt || (a.type.kind == K::Scalar && !a.type.is_list)) return true;
  return a.type.kind == K::Int && a.type.is_list && (a.name == "size" || a.name == "shape" || a.name == "sizes");
}

/// The int value (or int-list value) standing for argument `v` when it carries symbolic ints noted by the
/// Python argument parser (Note [Symbolic sizes under capture]), else nullptr.
ir::Value* symbolic_argument(CaptureSession& s, const SchemaArgument& a, const IValue& v, size_t* cursor) {
  if (!s.has_pending_symbolic() || !takes_sizes(a)) return nullptr;
  if (v.tag() == IValue::Tag::Int) return s.take_symbolic_argument(v.to_int(), *cursor);
  if (v.tag() != IValue::Tag::IntList) return nullptr;
  // An element first takes the symbolic int noted at its own position (the list passed through from
  // Python), then, for elements left, the next one of its value (a list a composite rebuilt).
  const auto& literals = v.to_int_list();
  std::vector<ir::Value*> elements(literals.size(), nullptr);
  bool any = false;
  for (size_t k = 0; k < literals.size(); ++k) {
    elements[k] = s.take_symbolic_argument(literals[k], *cursor, static_cast<int64_t>(k));
    any = any || elements[k] != nullptr;
  }
  for (size_t k = 0; k < literals.size(); ++k) {
    if (elements[k] == nullptr) elements[k] = s.take_symbolic_argument(literals[k], *cursor);
    any = any || elements[k] != nullptr;
  }
  if (!any) return nullptr;
  ir::Graph& g = s.graph();
  for (size_t k = 0; k < elements.size(); ++k) {
    if (elements[k] != nullptr) continue;
    elements[k] = g.append(g.create_constant(ir::Attribute::of_int(literals[k])))->output();
    elements[k]->set_type(ir::Type::int_type());
  }
  return g.append(g.create_list(std::move(elements), ir::Type::int_type()))->output();
}

/// Notes the values of a size-taking argument with the session (a symbolic element among them too: its
/// value is a symbol's, which size_table_argument's table never holds as a factor).
void note_size_literals(CaptureSession& s, const SchemaArgument& a, const IValue& v) {
  if (!takes_sizes(a)) return;
  if (v.tag() == IValue::Tag::Int) s.note_size_literal(v.to_int());
  if (v.tag() == IValue::Tag::IntList) {
    for (int64_t literal : v.to_int_list()) s.note_size_literal(literal);
  }
}

/// The int value (or int-list value) standing for a size-taking argument `v` whose literals the session's
/// size table names (Note [Symbolic sizes in the backward], SymbolicInts.h), else nullptr.
ir::Value* size_table_argument(CaptureSession& s, const SchemaArgument& a, const IValue& v) {
  if (!s.matches_size_symbols() || !takes_sizes(a)) return nullptr;
  if (v.tag() == IValue::Tag::Int) return s.size_symbol(v.to_int());
  if (v.tag() == IValue::Tag::Double) {  // a count a formula divides by (mean's backward)
    const double d = v.to_double();
    if (d != d || d < 2 || d > 9.0e15 || static_cast<double>(static_cast<int64_t>(d)) != d) return nullptr;
    return s.size_symbol(static_cast<int64_t>(d));
  }
  if (v.tag() != IValue::Tag::IntList) return nullptr;
  const auto& literals = v.to_int_list();
  std::vector<ir::Value*> elements(literals.size(), nullptr);
  bool any = false;
  for (size_t k = 0; k < literals.size(); ++k) {
    elements[k] = s.size_symbol(literals[k]);
    any = any || elements[k] != nullptr;
  }
  if (!any) return nullptr;
  ir::Graph& g = s.graph();
  for (size_t k = 0; k < elements.size(); ++k) {
    if (elements[k] != nullptr) continue;
    elements[k] = g.append(g.create_constant(ir::Attribute::of_int(literals[k])))->output();
    elements[k]->set_type(ir::Type::int_type());
  }
  return g.append(g.create_list(std::move(elements), ir::Type::int_type()))->output();
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
  size_t cursor = 0;  // into the session's pending symbolic arguments: Note [Symbolic sizes under capture]
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
        note_size_literals(s, args[i], v);
        if (ir::Value* sym = symbolic_argument(s, args[i], v, &cursor)) {
          inputs.push_back(sym);
          break;
        }
        if (ir::Value* sym = size_table_argument(s, args[i], v)) {
          inputs.push_back(sym);
          break;
        }

        // By position: a functional replacement may name it differently (fill_'s value, full_like's fill_value).
        attributes.push_back({record.schema().arguments()[i].name, ir::Attribute::of_ivalue(v)});
        break;
    }
  }
  // A functional replacement with more arguments than the in-place op (fill_ -> full_like): the rest
  // take their defaults, which FunctionalForm only allows to be None.
  const auto& record_args = record.schema().arguments();
  for (size_t i = args.size(); i < record_args.size(); ++i) {
    if (record_args[i].default_value != "None") {
      *why = "no literal for argument '" + record_args[i].name + "' of " + record.name().str();
      return nullptr;
    }
    attributes.push_back({record_args[i].name, ir::Attribute::none()});
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
  if (random) note_random_op_ran(*s);
  if (node == nullptr || s->broken()) return;
  s->graph().append(node);
  s->count_op();
  s->node_recorded();
  bind_results(*s, node, *stack, op.schema().returns().size());
}

}  // namespace

namespace {

/// The references the current session holds to t (its tensor map keeps one per recorded tensor), for
/// AccumulateGrad's decision to steal a gradient (eager/autograd/AccumulateGrad.h).
long session_references(const Tensor& t) {
  CaptureSession* s = current_session();
  return s != nullptr && s->find(t) != nullptr ? 1 : 0;
}

}  // namespace

void ensure_capture_fallback() {
  static std::once_flag once;
  std::call_once(once, [] {
    ensure_philox_generator_op();
    autograd::set_held_references_hook(&session_references);
    Dispatcher::singleton().register_fallback(DispatchKey::Capture, KernelFunction::from_boxed(&capture_fallback));
  });
}

}  // namespace kiln::capture
