// JointPartition: splitting a joint forward+backward graph (a capture that
// recorded a function and then the autograd Engine's backward over its
// outputs) into a forward graph and a backward graph (See Note [Partitioning
// the joint graph]).
#pragma once

#include <memory>
#include <vector>

#include "ir/Graph.h"

namespace kiln::capture {

// Note [Partitioning the joint graph]
// -----------------------------------
// The joint graph's nodes are in recording order: the first
// `num_forward_nodes` ran in the function, the rest in the backward. Its
// inputs are the forward's (declared, then lifted while the function ran)
// followed by the backward's (the grad_outputs placeholders, then tensors the
// backward lifted); its outputs are the forward's (the function's outputs and
// copy-backs) followed by the gradients.
//
// The forward graph takes the forward inputs, runs the forward nodes and
// returns the forward outputs followed by the saved values: the tensors the
// forward computes that the backward reads. The backward graph takes the
// joint inputs it reads (in joint order: forward inputs it needs, the
// grad_outputs, lifted constants) followed by the saved values, and returns
// the gradients. Forward nodes whose outputs are not tensors (constants,
// lists, generators) are recomputed in the backward rather than saved, and so
// are views and pointwise ops (tags `view`, `pointwise`) of one tensor input
// whose input the backward already has (a graph input, a saved or recomputed
// value), as min-cut partitioners recompute cheap values instead of saving
// them: a linear layer's backward reads the weight, not a saved w.t().
// In a symbolic graph (a forward input typed with symbols: Note [Symbolic
// sizes in the backward], SymbolicInts.h) the backward's saved-value and
// grad_output inputs keep their dtype and device but not their sizes.
struct JointPartition {
  std::unique_ptr<ir::Graph> forward;
  std::unique_ptr<ir::Graph> backward;
  /// The joint input index of each backward input before the saved values.
  std::vector<size_t> backward_inputs;
  /// How many saved values the forward returns after its outputs (and the backward takes last).
  size_t num_saved = 0;
};

/// Given a joint graph as Note [Partitioning the joint graph] describes.
/// Do    partition_joint(joint, nodes, inputs, outputs).
/// Result the forward and backward graphs; both verify. RuntimeError when a
///        forward node reads a backward input.
[[nodiscard]] JointPartition partition_joint(const ir::Graph& joint, size_t num_forward_nodes,
                                             size_t num_forward_inputs, size_t num_forward_outputs);

}  // namespace kiln::capture
