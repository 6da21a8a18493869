// The capture::sym_size and capture::sym_arith ops (Note [Symbolic sizes under capture]).
#include "capture/SymbolicInts.h"

#include "eager/core/Error.h"
#include "eager/ops/Tensor.h"
#include "kiln/generated/Functions.h"
#include "ir/Clone.h"
#include "ir/Graph.h"
#include "ir/Interpreter.h"
#include "ir/Type.h"

#include <unordered_map>

namespace kiln::capture {

namespace {

void sym_size_kernel(void*, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  const int64_t dim = stack->back().to_int();
  stack->pop_back();
  const Tensor self = stack->back().to_tensor();
  stack->pop_back();
  const int64_t rank = self.dim();
  KILN_CHECK_INDEX(dim >= -rank && dim < rank, "capture::sym_size: dimension ", dim, " out of range for rank ", rank);
  stack->emplace_back(self.sizes()[static_cast<size_t>(dim < 0 ? dim + rank : dim)]);
}

void sym_arith_kernel(void*, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  const int64_t op = stack->back().to_int();
  stack->pop_back();
  const int64_t b = stack->back().to_int();
  stack->pop_back();
  const int64_t a = stack->back().to_int();
  stack->pop_back();
  stack->emplace_back(symbolic_arith(a, b, op));
}

struct SymbolicOps {
  OperatorHandle size;
  OperatorHandle arith;
};

const SymbolicOps& symbolic_ops() {
  static const SymbolicOps ops = [] {
    Dispatcher& d = Dispatcher::singleton();
    OperatorHandle size = d.register_def(FunctionSchema::parse("capture::sym_size(Tensor self, int dim) -> int"), {});
    for (DispatchKey k : {DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::Meta, DispatchKey::Autograd}) {
      d.register_impl(size.name(), k, KernelFunction::from_boxed(&sym_size_kernel));
    }
    OperatorHandle arith =
        d.register_def(FunctionSchema::parse("capture::sym_arith(int a, int b, int op) -> int"), {});
    // No tensor arguments: a call dispatches on the thread's default BackendSelect key.
    d.register_impl(arith.name(), DispatchKey::BackendSelect, KernelFunction::from_boxed(&sym_arith_kernel));
    return SymbolicOps{size, arith};
  }();
  return ops;
}

// Registered when the library loads, so graphs that use them parse in any process.
[[maybe_unused]] const bool symbolic_ops_registered = [] {
  (void)symbolic_ops();
  return true;
}();

}  // namespace

const OperatorHandle& symbolic_size_op() { return symbolic_ops().size; }
const OperatorHandle& symbolic_arith_op() { return symbolic_ops().arith; }

int64_t symbolic_arith(int64_t a, int64_t b, int64_t op) {
  switch (static_cast<SymbolicOp>(op)) {
    case SymbolicOp::Add: return a + b;
    case SymbolicOp::Sub: return a - b;
    case SymbolicOp::Mul: return a * b;
    case SymbolicOp::FloorDiv:
    case SymbolicOp::Mod: {
      KILN_CHECK_VALUE(b != 0, "capture::sym_arith: integer division or modulo by zero");
      int64_t q = a / b;
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;  // Python floors
      return static_cast<SymbolicOp>(op) == SymbolicOp::FloorDiv ? q : a - q * b;
    }
    case SymbolicOp::Max: return a > b ? a : b;
    case SymbolicOp::Min: return a < b ? a : b;
  }
  KILN_FAIL(Value, "capture::sym_arith: unknown op ", op);
}

}  // namespace kiln::capture

namespace kiln::capture {

namespace {

/// A meta tensor with t's sizes, strides and dtype (t itself when already meta).
Tensor meta_like(const Tensor& t) {
  if (t.device().type() == DeviceType::Meta) return t;
  return kiln::empty_strided(t.sizes(), t.strides(), t.dtype(), Device(DeviceType::Meta));
}

bool is_symbolic_op(const ir::Node& n) {
  return n.kind() == ir::NodeKind::Op &&
         (n.op().name() == symbolic_size_op().name() || n.op().name() == symbolic_arith_op().name());
}

}  // namespace

std::unique_ptr<ir::Graph> specialize_shapes(const ir::Graph& src, const std::vector<IValue>& inputs) {
  KILN_CHECK(inputs.size() == src.inputs().size(), "specialize_shapes: the graph takes ", src.inputs().size(),
             " inputs, got ", inputs.size());
  std::unique_ptr<ir::Graph> g = ir::clone(src);
  std::unordered_map<const ir::Value*, IValue> env;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ir::Value* v = g->inputs()[i];
    if (inputs[i].is_tensor()) {
      const Tensor& t = inputs[i].to_tensor();
      ir::TensorType tt = ir::TensorType::of(t);
      if (v->type().is_tensor()) tt.requires_grad = v->type().tensor_type().requires_grad;
      v->set_type(ir::Type::tensor(tt));
      env[v] = IValue(meta_like(t));
    } else {
      env[v] = inputs[i];
    }
  }
  const auto get = [&](const ir::Value* v) -> const IValue& {
    auto it = env.find(v);
    KILN_CHECK(it != env.end(), "specialize_shapes: a value is read before it is computed");
    return it->second;
  };
  const Device meta(DeviceType::Meta);
  const std::vector<ir::Node*> nodes = g->nodes();
  for (ir::Node* n : nodes) {
    // Factory ops run on meta too (their device attributes, None included, swapped for the run only).
    std::vector<std::pair<std::string, ir::Attribute>> devices;
    for (const ir::NamedAttribute& a : std::vector<ir::NamedAttribute>(n->attributes())) {
      if (a.value.kind() != ir::Attribute::Kind::Device && !(a.name == "device" && a.value.is_none())) continue;
      devices.emplace_back(a.name, a.value);
      n->set_attribute(a.name, ir::Attribute::of_device(meta));
    }
    std::vector<IValue> outputs = ir::run_node(*n, get);
    for (auto& [name, value] : devices) n->set_attribute(name, value);
    if (is_symbolic_op(*n)) {
      ir::Node* c = g->create_constant(ir::Attribute::of_int(outputs.at(0).to_int()));
      c->insert_before(n);
      c->output()->set_type(ir::Type::int_type());
      env[c->output()] = outputs.at(0);
      n->output()->replace_all_uses_with(c->output());
      g->erase(n);
      continue;
    }
    for (size_t k = 0; k < outputs.size() && k < n->outputs().size(); ++k) {
      ir::Value* out = n->outputs()[k];
      if (outputs[k].is_tensor() && outputs[k].to_tensor().defined() && out->type().is_tensor()) {
        const ir::TensorType& old = out->type().tensor_type();
        ir::TensorType tt = ir::TensorType::of(outputs[k].to_tensor());
        tt.device = old.device;
        tt.requires_grad = old.requires_grad;
        out->set_type(ir::Type::tensor(tt));
      }
      env[out] = std::move(outputs[k]);
    }
  }
  return g;
}

}  // namespace kiln::capture
