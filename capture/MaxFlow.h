// MaxFlow: a maximum flow / minimum s-t cut of a small directed graph with
// integer capacities (Dinic's algorithm), for the joint graph's save-versus-
// recompute choice (See Note [Choosing what to save], SavePlan.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace kiln::capture {

/// A flow network over vertices 0 .. num_vertices()-1. Build it with
/// add_vertex/add_edge, call max_flow once, then ask source_side() for the
/// minimum cut: the vertices still reachable from the source through edges
/// with residual capacity. Every edge from that set to the rest is saturated
/// and their capacities sum to the flow (max-flow = min-cut).
class MaxFlow {
 public:
  using Capacity = int64_t;
  /// An edge that no finite cut may cross. Sums of up to 2^20 finite
  /// capacities below kUncuttable stay representable.
  static constexpr Capacity kUncuttable = std::numeric_limits<Capacity>::max() / 4;

  MaxFlow() = default;
  explicit MaxFlow(size_t num_vertices) : adjacency_(num_vertices) {}

  /// Given a network of n vertices.   Do add_vertex().   Result vertex n exists; returns n.
  size_t add_vertex();
  /// Given vertices a and b.
  /// Do    add_edge(a, b, 5).
  /// Result an edge a -> b of capacity 5 (parallel edges add up); a capacity
  ///        of kUncuttable or more is clamped to kUncuttable. ValueError for a
  ///        negative capacity, RuntimeError for a vertex out of range.
  void add_edge(size_t from, size_t to, Capacity capacity);

  /// The value of a maximum flow from `source` to `sink` (kUncuttable or more
  /// when every cut crosses an uncuttable edge). Call once.
  Capacity max_flow(size_t source, size_t sink);
  /// After max_flow: for each vertex, whether it lies on the source's side of
  /// the minimum cut closest to the source.
  [[nodiscard]] std::vector<bool> source_side() const;

  [[nodiscard]] size_t num_vertices() const { return adjacency_.size(); }

 private:
  struct Edge {
    size_t to;
    Capacity residual;
  };
  /// Levels by breadth-first search from `source` over residual edges; false when `sink` is unreachable.
  bool assign_levels(size_t source, size_t sink);
  /// Pushes a blocking flow along the level graph; returns how much.
  Capacity push_blocking_flow(size_t source, size_t sink);
  /// Every vertex reachable from `from` along edges with residual capacity.
  [[nodiscard]] std::vector<bool> reachable_from(size_t from) const;

  std::vector<Edge> edges_;  // edge e and its reverse e ^ 1
  std::vector<std::vector<size_t>> adjacency_;
  std::vector<int64_t> level_;
  std::vector<size_t> next_edge_;
  size_t source_ = 0;
  bool solved_ = false;
};

}  // namespace kiln::capture
