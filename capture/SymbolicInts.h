// SymbolicInts: the int-valued ops a symbolic capture records for sizes read in
// Python and the integer arithmetic done on them (See Note [Symbolic sizes under
// capture]).
#pragma once

#include <memory>
#include <vector>

#include "eager/dispatch/Dispatcher.h"

namespace kiln::capture {

// Note [Symbolic sizes under capture]
// -----------------------------------
// Under a symbolic capture (kiln.compile with dynamic shapes, python/kiln/compiler/
// _symbolic.py), a size read in Python (x.size(), x.shape[0], len(x)) of a
// dimension that may change is a Python SymInt rather than an int. Each SymInt is
// backed by an int value of the graph: %n = capture::sym_size(%x, dim=0) for a
// size, %m = capture::sym_arith(%n, %k, op=...) for + - * // % (CaptureSession::
// symbolic_size / symbolic_arith hand Python a handle to it). The graph therefore
// recomputes every size it uses from the tensors it runs on: nothing the capture
// saw is baked in.
//
// A SymInt passed to an op (an int, int[], SymInt?, Scalar argument) reaches
// the kernel as its capture-time value: the Python argument parser reads it
// (python/csrc/PySymbolicInt.h) and notes (value, handle) on the session
// (note_symbolic_argument, with its index in an int list). When the Capture
// fallback records the next node, each element of an int-list argument takes the
// pending symbolic argument noted at its own index with its value (the list passed
// through from Python), and the elements and int/Scalar arguments left take, in
// argument order, the next pending one with their value (take_symbolic_argument),
// becoming int graph values (a prim::ListConstruct for a list) instead of
// literals. The pending list lives until a symbolic argument is noted after a
// node was recorded, so a CompositeImplicit op whose first recorded part does not
// take the size (reshape's clone before its view) still hands it to the part
// that does (narrow's slice takes start + length: matched by value).
// Matching by value within one call is exact for ops that pass their Python
// arguments through; a composite that computes a size in C++ (matmul folding a
// batch into rows) records it as a literal. kiln.compiler checks every symbolic
// graph by running it on meta tensors at other sizes (_symbolic.validate) and
// specialises the guards of a graph that does not generalise.

// Note [Symbolic sizes in the backward]
// -------------------------------------
// The autograd Engine's formulas are C++: they read sizes as int64_t from the
// tensors they saved (sum's backward expands to self.sizes(), view's reshapes
// to them, mean's divides by their product) and pass them to ops as literals,
// so a joint capture would bake the capturing call's sizes into its backward.
// While kiln.compiler records the backward of a symbolic capture it hands the
// session a table (CaptureSession::set_size_symbols) of the values a size of
// this capture may take: each symbol, each product of two, each of those times
// a literal extent of an input, every entry unambiguous (a value two entries
// share, or that is itself an extent of some input, is left out: it might be a
// constant). The Capture fallback then records a size-taking argument (the
// same ones as above: SymInt, SymInt[], Scalar, int[] named size/shape/sizes)
// whose literal is in the table as the table's symbolic int, made on first use
// (sym_arith for a product). Matching by value can be wrong (a formula's own
// constant 2 when a batch is 2), so kiln.compiler keeps such a graph only after
// running its forward and backward at other sizes against the eager autograd
// of its forward graph (python/kiln/compiler/_symbolic_backward.py); a graph
// that fails is kept for its exact sizes, as before.

/// capture::sym_size(Tensor self, int dim) -> int.
[[nodiscard]] const OperatorHandle& symbolic_size_op();
/// capture::sym_arith(int a, int b, int op) -> int, op one of SymbolicOp.
[[nodiscard]] const OperatorHandle& symbolic_arith_op();

/// The arithmetic of capture::sym_arith (Python's semantics: floor division and modulo).
enum class SymbolicOp : int64_t { Add = 0, Sub = 1, Mul = 2, FloorDiv = 3, Mod = 4, Max = 5, Min = 6 };

/// a `op` b with Python's integer semantics (RuntimeError on division by zero).
[[nodiscard]] int64_t symbolic_arith(int64_t a, int64_t b, int64_t op);

}  // namespace kiln::capture

namespace kiln::ir {
class Graph;
}  // namespace kiln::ir

namespace kiln::capture {

/// Given a symbolic graph (capture::sym_* int nodes, inputs typed with symbols) and
/// the tensors (or other values) of one run.
/// Do    specialize_shapes(g, inputs).
/// Result a copy of g for those inputs' sizes: inputs typed from them, each
///        capture::sym_* node replaced by the constant it computes, every tensor
///        value retyped from the op's meta run (sizes, strides, dtype; device and
///        requires_grad kept). The fusing runtime compiles it per size
///        (kiln.compiler's _specialize.py: Note [Fused kernels for symbolic graphs]).
[[nodiscard]] std::unique_ptr<ir::Graph> specialize_shapes(const ir::Graph& g, const std::vector<IValue>& inputs);

}  // namespace kiln::capture
