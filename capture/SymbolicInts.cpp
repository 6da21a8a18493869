// The capture::sym_size and capture::sym_arith ops (Note [Symbolic sizes under capture]).
#include "capture/SymbolicInts.h"

#include "eager/core/Error.h"
#include "eager/ops/Tensor.h"

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
