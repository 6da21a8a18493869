// Interpreter: the reference executor of a Graph. Each op node is called
// through the dispatcher's boxed path, so the result is exactly what eager
// calls of the same ops give (kiln.compile's "eager" backend).
#pragma once

#include <functional>
#include <vector>

#include "eager/dispatch/IValue.h"
#include "ir/Graph.h"

namespace kiln::ir {

/// Given g = graph(%x : f32[2], %y : f32[2]) computing kiln::add.Tensor(%x, %y, alpha=1).
/// Do    interpret(g, {x, y}).
/// Result {x + y}: one IValue per graph output.
/// RuntimeError when the inputs do not match the graph's input types (count,
/// kind, dtype, rank, concrete sizes, or a size symbol bound to two extents);
/// op errors propagate unchanged. Values are released after their last use.
[[nodiscard]] std::vector<IValue> interpret(const Graph& g, std::vector<IValue> inputs);

/// Given a node of g's node list (an op, constant, list construct or unpack).
/// Do    run_node(n, get), `get` giving the value of each of n's inputs.
/// Result the values of n's outputs, as interpret computes them (an op through
/// OperatorHandle::call_boxed). runtime/CompiledGraph runs its eager steps this way.
[[nodiscard]] std::vector<IValue> run_node(const Node& n, const std::function<const IValue&(const Value*)>& get);

}  // namespace kiln::ir
