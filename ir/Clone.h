// Clone: copying nodes and whole graphs, within a graph or into another,
// through a map from old values to new ones.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "ir/Graph.h"

namespace kiln::ir {

/// Old value -> its copy (or the value that stands for it in the destination).
using ValueMap = std::unordered_map<const Value*, Value*>;

/// Given node n (of any graph) and `map` covering n's inputs.
/// Do    clone_node(n, dst, map).
/// Result a detached copy of n in dst (same kind, attributes and output types),
///        reading map[input]; map gains n's outputs -> the copy's outputs. Names
///        carry over where dst has them free. RuntimeError when an input is unmapped.
Node* clone_node(const Node& n, Graph& dst, ValueMap& map);

/// Given src = graph(%a, %b) { ...; return (%r) } and values x, y of dst.
/// Do    clone_graph_into(src, dst, {x, y}, map, pos).
/// Result src's nodes copied into dst before pos (at the end when pos is null),
///        reading x for %a and y for %b; returns the copies of src's outputs.
std::vector<Value*> clone_graph_into(const Graph& src, Graph& dst, const std::vector<Value*>& inputs, ValueMap& map,
                                     Node* pos = nullptr);

/// A deep copy of g (inputs, nodes, outputs, names); it prints identically.
[[nodiscard]] std::unique_ptr<Graph> clone(const Graph& g);

}  // namespace kiln::ir
