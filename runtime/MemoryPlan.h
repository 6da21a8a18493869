// The memory plan of a CompiledGraph: when each value slot dies, which kernel
// outputs may overwrite a dead input in place, and (mode="reduce-overhead") a
// static arena layout for kernel outputs. See Note [The memory plan].
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime {

// Note [The memory plan]
// ----------------------
// CompiledGraph (CompiledGraph.h) runs a flat list of steps over value slots;
// the plan is computed once, from the steps alone, when the graph is built.
//  - Liveness: a slot is released after the last step that reads it (graph
//    outputs never), so its buffer goes back to the caching allocator, which
//    hands it to the next request of that size class: buffers of dead
//    intermediates are reused without any bookkeeping here. A storage lives as
//    long as the last read of any value in its storage class (views share one:
//    passes/effects.h AliasClasses).
//  - In place: a kernel output may take the buffer of a kernel input of the same
//    dtype and layout (a pointwise kernel reads element i of that input before it
//    writes element i of the output, at the same address) when the input's
//    storage class dies at this step, holds no graph input (the caller holds it)
//    and no graph output, no node writes it, and the kernel reads no other value
//    of that class. The run checks again before it reuses a buffer: the tensor
//    in the slot must be the only reference to its impl and to its storage, with
//    the planned dtype and layout, so nothing this plan did not see can observe
//    the overwrite; otherwise the output is allocated as usual.
//  - Arena (mode="reduce-overhead", static shapes): every kernel output whose
//    storage class holds no graph input or output and is not written gets a byte
//    range of one arena, allocated on the first run and kept; ranges of buffers
//    whose lifetimes [defining step, last read of the class] overlap are
//    disjoint (first fit, largest first); an output taking a dead arena input's
//    buffer in place shares its range. A replay then makes no allocator call for
//    those intermediates: only graph outputs and the outputs of eager steps
//    (matmul, ...: the ops allocate them) come from the allocator. One run at a
//    time uses the arena; a concurrent run of the same graph allocates instead.
//    A CUDA graph's arena is one caching-allocator block on its inputs' device
//    (a run on another device, or on CPU inputs, goes without it), which is what
//    lets its launches be captured and replayed as a CUDA graph (Note [CUDA
//    graphs of a compiled graph], CudaGraphReplay.h).

/// One step as the plan sees it.
struct PlanStep {
  std::vector<size_t> reads;   ///< value slots read
  std::vector<size_t> writes;  ///< value slots defined
  bool kernel = false;         ///< a fused kernel: its writes may be planned
  /// Kernel steps, per write: its buffer's bytes, and the reads (indices into
  /// `reads`) of the same dtype and layout, which it may overwrite in place.
  std::vector<int64_t> write_bytes;
  std::vector<std::vector<size_t>> same_layout_reads;
};

struct MemoryPlanInput {
  std::vector<PlanStep> steps;
  size_t num_slots = 0;
  std::vector<size_t> graph_inputs, graph_outputs;  // slots
  /// Per slot: its storage class (slots that may share storage have one), and
  /// per class whether a node writes it / it holds a graph input / a graph output.
  std::vector<size_t> storage_class;
  std::vector<bool> class_written, class_has_input, class_has_output;
  bool arena = false;  ///< mode="reduce-overhead"
};

struct MemoryPlan {
  std::vector<std::vector<size_t>> release;  ///< per step: slots dead after it
  /// Per step, per write: the read (index into the step's `reads`) whose buffer it takes, or -1.
  std::vector<std::vector<int32_t>> in_place;
  /// Per step, per write: its byte offset in the arena, or -1.
  std::vector<std::vector<int64_t>> arena_offset;
  int64_t arena_bytes = 0;
  int64_t in_place_count = 0;  ///< writes planned in place
  int64_t arena_count = 0;     ///< writes placed in the arena
  int64_t arena_unshared_bytes = 0;  ///< the arena's size had no two buffers shared a range

  /// One line per planned write, for logs and tests.
  [[nodiscard]] std::string str() const;
};

/// Given a CompiledGraph's steps.   Do plan_memory(in).   Result the release lists,
/// the in-place choices and (in.arena) the arena layout of Note [The memory plan].
[[nodiscard]] MemoryPlan plan_memory(const MemoryPlanInput& in);

}  // namespace kiln::runtime
