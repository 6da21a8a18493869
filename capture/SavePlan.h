// SavePlan: which forward values of a joint graph the backward recomputes and
// which the forward saves for it, as a minimum cut over the forward nodes
// (See Note [Choosing what to save]).
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "ir/Graph.h"

namespace kiln::capture {

// Note [Choosing what to save]
// ----------------------------
// The backward of a joint graph (Note [Partitioning the joint graph],
// JointPartition.h) reads forward values. Each one is either saved (the
// forward returns it, and it is held until the backward runs) or recomputed
// in the backward from values the backward has: graph inputs (held anyway),
// saved values, other recomputed values. The choice minimises the bytes
// saved, as min-cut partitioners do (functorch's min-cut rematerialisation),
// by a maximum flow over this network:
//
// - each forward node n is a vertex C(n), on the sink's side when the
//   backward recomputes n; each of its outputs v a vertex O(v), on the sink's
//   side when the backward has v;
// - C(n) -> O(v) costs what saving v costs: having v without recomputing n
//   means saving it;
// - O(u) -> C(n), uncuttable, for each forward input u of n: recomputing n
//   needs its inputs (graph inputs are always there: no edge);
// - O(v) -> sink, uncuttable, for each v a backward node or gradient reads;
// - source -> C(n), uncuttable, when n must not be recomputed.
//
// A finite cut then says for each node whether it is recomputed and which
// values are saved, and its capacity is their cost. A recomputed value must
// also fuse into the backward's kernels, as the fusible chains functorch
// recomputes do: a node whose value the backward would have to materialise
// (read by a matmul, a normalisation's backward, a cat, or returned as a
// gradient, directly or through views) is not recomputed, since that costs a
// kernel and a pass over memory that reading the saved value does not (a
// GELU's output feeding the next layer's weight gradient is saved, not
// recomputed; a sigmoid read only by pointwise backward formulas is
// recomputed inside them). Recomputable otherwise: nodes with
// no tensor output (constants, lists, sizes, generators: never saved), views
// (tag `view`; never saved either, since a saved view holds its base's
// storage: the base is saved instead), pointwise and factory ops, casts and
// copies (_to_copy, clone, zeros_like, ones_like, full_like), reductions
// whose output is at least a quarter of their input (a cheap pass; a
// reduction that shrinks its input more is as costly to redo as a matmul),
// and structural nodes. Not recomputable: matmuls, convolutions,
// normalisations, attention and every other op; in-place ops and any node
// that reads or defines a value an in-place op takes (through views too: its
// storage holds the op's result afterwards, a new value that may be read) or
// a graph input the run writes back into (`written_inputs`), whose contents
// in the backward would not be what the forward read; random ops. A draw
// has its own capture::philox_generator node (Note [Random ops under
// capture]), so recomputing the pair would draw the forward's numbers again,
// but no kernel fuses a draw: the backward would materialise it, an RNG pass
// that saving the draw (or a cheaper pointwise function of it, a bool mask)
// avoids. Pointwise ops of a saved draw are recomputed like any others.
//
// The cost of saving a tensor is its bytes at the recorded sizes (a symbol
// counts as kSymbolExtent); ties go to the value nearer the backward (fewer
// nodes to recompute), as functorch weighs a value by its distance from the
// backward: cost = bytes * K + min(distance, 3), K larger than any sum of the
// distance terms, so bytes always decide first.

/// The extent a symbolic dimension counts as in a saved value's cost.
constexpr int64_t kSymbolExtent = 64;

/// The bytes a tensor of type t holds at its recorded sizes (a symbol counts
/// as kSymbolExtent, an unknown dtype as 4 bytes, an unknown rank as 2^20
/// elements); 0 for a non-tensor type.
[[nodiscard]] int64_t estimated_bytes(const ir::Type& t);

/// The forward values a joint graph's backward reads.
struct BackwardReads {
  /// Each value read by a backward node or returned as a gradient, once, in order.
  std::vector<const ir::Value*> values;
  /// Those of them read by a backward node that no kernel fuses a pointwise
  /// producer into (not pointwise, not a reduction) or returned as a gradient:
  /// recomputed, they would be materialised in the backward.
  std::unordered_set<const ir::Value*> read_whole;
};

/// Given the forward nodes of a joint graph in order, the forward values its
///        backward reads, and the graph inputs a run writes back into.
/// Do    nodes_to_recompute(forward_nodes, backward_reads, written_inputs).
/// Result the forward nodes on the recomputed side of a minimum cut (Note
///        [Choosing what to save]); a forward value the backward needs is
///        recomputed when its node is in the set, else saved, and the saved
///        values' total cost is minimal.
[[nodiscard]] std::unordered_set<const ir::Node*> nodes_to_recompute(
    const std::vector<ir::Node*>& forward_nodes, const BackwardReads& backward_reads,
    const std::unordered_set<const ir::Value*>& written_inputs);

/// Whether node n needs its inputs in memory: no kernel takes a pointwise
/// producer of them into itself. False for pointwise ops, casts and copies,
/// reductions, and views whose own readers (through further views) are all
/// such; true for the graph's return and every other op.
[[nodiscard]] bool reads_whole(const ir::Node& n);

}  // namespace kiln::capture
