// Multi-tensor grouping: fusion groups that compile to one kernel and whose
// results nothing in the graph reads (a whole parameter group's optimizer
// update, the step counters) run as one multi-tensor kernel step.
// See Note [Multi-tensor kernel steps].
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/Graph.h"
#include "passes/fuse_pointwise.h"

namespace kiln::passes {

// Note [Multi-tensor kernel steps]
// --------------------------------
// A captured optimizer step updates each parameter with the same element-wise
// arithmetic (python/kiln/optim/_capturable.py): fuse_pointwise makes one group
// per parameter (their layouts differ), and each compiles to the same kernel
// (one structural hash: the kernel IR has no sizes). Run as they are, a step
// over 100 parameters makes 100 kernel launches, each split across the thread
// pool on its own. This pass puts such groups together: the runtime then runs
// them as ONE kernel step, one parallel loop over the members' elements laid
// end to end (each chunk calls the shared kernel on its member's pointers, as
// PyTorch's multi_tensor_apply does), so small parameters share a thread's
// work instead of each paying a launch (runtime/MultiTensorRun.h).
//
// Which groups: every member has the same kernel key (`kernel_key`, from
// codegen: the kernel's structural hash, nullopt for a kernel that cannot be
// one: a strided or CUDA one), and no node of the graph reads a member's
// results (they are only returned: a training step's updated parameters,
// state and step counts, which kiln.compile copies back). The merged step runs
// where its last member ran; since nothing reads the earlier members' results,
// running them later is unobservable, and their inputs are computed earlier
// still. The element-wise arithmetic is the members' own kernel, so the
// results are bit for bit those of the separate kernels. (A 1-element group's
// kernel reads every input as a single element, a kernel of its own; the
// runtime gives it the dense kernel of the same math first, which computes the
// same at one element, so a scalar parameter joins the others' step:
// runtime/CompiledGraph.cpp.)
//
// The runtime plans a member's output into a dead input's buffer only when
// that input is the member's own (no other member reads it), and stores an
// output into a graph input only when no other member reads that input: the
// members do not run element by element together.

/// Given a graph's fusion groups (in the order they run) and, per group, its kernel key (nullopt: not a candidate).
/// Do    group_multi_tensor(groups, kernel_key).
/// Result sets of at least two group indices (each in run order; sets ordered by their last member) to run
///        as one multi-tensor kernel step at the place of their last member; groups in no set run alone.
[[nodiscard]] std::vector<std::vector<size_t>> group_multi_tensor(
    const std::vector<FusionGroup>& groups, const std::vector<std::optional<uint64_t>>& kernel_key);

}  // namespace kiln::passes
