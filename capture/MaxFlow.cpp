// MaxFlow: Dinic's algorithm (level graph by breadth-first search, blocking
// flows by an iterative depth-first walk) and the minimum cut it leaves.
#include "capture/MaxFlow.h"

#include <algorithm>
#include <deque>

#include "eager/core/Error.h"

namespace kiln::capture {

size_t MaxFlow::add_vertex() {
  adjacency_.emplace_back();
  return adjacency_.size() - 1;
}

void MaxFlow::add_edge(size_t from, size_t to, Capacity capacity) {
  KILN_CHECK_VALUE(capacity >= 0, "MaxFlow: negative capacity ", capacity);
  KILN_CHECK(from < adjacency_.size() && to < adjacency_.size(), "MaxFlow: edge ", from, " -> ", to, " outside ",
             adjacency_.size(), " vertices");
  KILN_CHECK(!solved_, "MaxFlow: add_edge after max_flow");
  adjacency_[from].push_back(edges_.size());
  edges_.push_back({to, std::min(capacity, kUncuttable)});
  adjacency_[to].push_back(edges_.size());
  edges_.push_back({from, 0});
}

bool MaxFlow::assign_levels(size_t source, size_t sink) {
  level_.assign(adjacency_.size(), -1);
  level_[source] = 0;
  std::deque<size_t> queue{source};
  while (!queue.empty()) {
    const size_t v = queue.front();
    queue.pop_front();
    for (size_t e : adjacency_[v]) {
      const Edge& edge = edges_[e];
      if (edge.residual == 0 || level_[edge.to] >= 0) continue;
      level_[edge.to] = level_[v] + 1;
      queue.push_back(edge.to);
    }
  }
  return level_[sink] >= 0;
}

MaxFlow::Capacity MaxFlow::push_blocking_flow(size_t source, size_t sink) {
  next_edge_.assign(adjacency_.size(), 0);
  Capacity pushed = 0;
  std::vector<size_t> path;  // edges from the source to v along the level graph
  size_t v = source;
  const auto tail_of = [&](size_t k) { return k == 0 ? source : edges_[path[k - 1]].to; };
  while (true) {
    if (v == sink) {
      Capacity bottleneck = kUncuttable;
      for (size_t e : path) bottleneck = std::min(bottleneck, edges_[e].residual);
      for (size_t e : path) {
        edges_[e].residual -= bottleneck;
        edges_[e ^ 1].residual += bottleneck;
      }
      pushed += bottleneck;
      if (pushed >= kUncuttable) return pushed;
      // Walk back to the tail of the first edge the push saturated.
      size_t k = 0;
      while (edges_[path[k]].residual != 0) ++k;
      v = tail_of(k);
      path.resize(k);
      continue;
    }
    bool advanced = false;
    for (size_t& i = next_edge_[v]; i < adjacency_[v].size(); ++i) {
      const size_t e = adjacency_[v][i];
      const Edge& edge = edges_[e];
      if (edge.residual > 0 && level_[edge.to] == level_[v] + 1) {
        path.push_back(e);
        v = edge.to;
        advanced = true;
        break;
      }
    }
    if (advanced) continue;
    if (v == source) return pushed;
    level_[v] = -1;  // a dead end for the rest of this phase
    path.pop_back();
    v = tail_of(path.size());
    ++next_edge_[v];
  }
}

MaxFlow::Capacity MaxFlow::max_flow(size_t source, size_t sink) {
  KILN_CHECK(source < adjacency_.size() && sink < adjacency_.size() && source != sink,
             "MaxFlow: bad source/sink ", source, ", ", sink);
  KILN_CHECK(!solved_, "MaxFlow: max_flow called twice");
  solved_ = true;
  source_ = source;
  Capacity total = 0;
  while (total < kUncuttable && assign_levels(source, sink)) total += push_blocking_flow(source, sink);
  return total;
}

std::vector<bool> MaxFlow::reachable_from(size_t from) const {
  std::vector<bool> seen(adjacency_.size(), false);
  seen[from] = true;
  std::vector<size_t> stack{from};
  while (!stack.empty()) {
    const size_t v = stack.back();
    stack.pop_back();
    for (size_t e : adjacency_[v]) {
      const Edge& edge = edges_[e];
      if (edge.residual == 0 || seen[edge.to]) continue;
      seen[edge.to] = true;
      stack.push_back(edge.to);
    }
  }
  return seen;
}

std::vector<bool> MaxFlow::source_side() const {
  KILN_CHECK(solved_, "MaxFlow: source_side before max_flow");
  return reachable_from(source_);
}

}  // namespace kiln::capture
