// Pointwise fusion: groups maximal vertical chains of pointwise op nodes of
// one output shape into fusion groups, each to become one kernel.
// See Note [Pointwise fusion groups].
#pragma once

#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/Graph.h"

namespace kiln::passes {

// Note [Pointwise fusion groups]
// ------------------------------
// The pass does not rewrite the graph (the IR has no fusion-group node kind
// yet): it returns a plan the runtime executes. A group runs where its last
// node stands, so a node joins a group only when no node outside the group
// that stands before it reads a group member's result; every input of the
// group is then computed before the group runs, and every outside reader of
// a group result after. Candidates are op nodes with one output (recorded as
// not requiring grad: a kernel records no autograd history) whose tensor
// types are fully known on the CPU (dtype, concrete sizes, strides), whose
// output layout is dense (contiguous up to a permutation of dims: a kernel
// writes its outputs in the recorded layout, so the strides a caller sees do
// not change), whose inputs are all tensors (scalars are attributes), and that
// `fusible` accepts (the kernel math table has an entry:
// codegen/PointwiseMath.h). Members of a group share one output layout (sizes
// and strides); inputs broadcast to it. A node joins the latest group that
// produces one of its inputs (vertical fusion) or else the latest group
// (horizontal: siblings of one layout share a loop). Graphs that write in place (an in-place or out=
// op) are not fused at all: a group's delayed reads could see a later write.

struct FusionGroup {
  std::vector<const ir::Node*> nodes;     // in graph order; the last one is where the group runs
  std::vector<const ir::Value*> inputs;   // read from outside the group, in first-use order
  std::vector<const ir::Value*> outputs;  // member results read outside the group or returned
};

/// Which group each grouped node is in (an index into the pass's list of groups).
using GroupIndex = std::unordered_map<const ir::Node*, size_t>;

/// Given group gi's members so far and a node n after them.
/// Do    reads_outside_before(members, gi, n, group_of).
/// Result whether a node outside gi that stands before n reads a member's result: n may then not
///        join gi, since the group runs at its last node (Note [Pointwise fusion groups]).
[[nodiscard]] bool reads_outside_before(const std::vector<const ir::Node*>& members, size_t gi, const ir::Node* n,
                                        const GroupIndex& group_of);

/// Given group gi with its nodes decided, and the values g returns.
/// Do    collect_group_boundary(group, gi, group_of, returned).
/// Result group.inputs holds what its members read from outside gi (first-use order) and group.outputs
///        the member results read outside gi or returned.
void collect_group_boundary(FusionGroup& group, size_t gi, const GroupIndex& group_of,
                            const std::unordered_set<const ir::Value*>& returned);

/// Given g and a predicate saying which candidate nodes may fuse (they have kernel math and,
/// where the graph runs with autograd, record no history: runtime/CompiledGraph.cpp).
/// Do    fuse_pointwise(g, fusible).
/// Result the fusion groups of g in the order of their last nodes; nodes in no group stay eager.
[[nodiscard]] std::vector<FusionGroup> fuse_pointwise(const ir::Graph& g,
                                                      const std::function<bool(const ir::Node&)>& fusible);

}  // namespace kiln::passes
