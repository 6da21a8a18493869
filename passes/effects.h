// Effects: what a node does besides computing its outputs (writes, random
// draws), and which values may share storage, for the passes that delete,
// merge or forward values. See Note [When a pass may drop, merge or forward a value].
#pragma once

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "ir/Graph.h"

namespace kiln::passes {

// Note [When a pass may drop, merge or forward a value]
// -----------------------------------------------------
// Capture records in-place ops as they ran (`kiln::mul_.Scalar` on a fresh
// tensor inside dropout, `add_` on a buffer), and views as views, so a
// captured graph is not purely functional: a write through one value changes
// every value that shares its storage. The passes therefore keep three rules:
//  - dropping (DCE): a node with effects stays even when nothing reads it:
//    one that writes an argument (a `(a!)` alias in its schema or the
//    `inplace` tag), a random op (dropping it would shift the generator's
//    offset for every later draw), and an op that returns nothing;
//  - merging (CSE): never a node with effects, and never a node that reads or
//    defines a value whose storage some node writes (its value depends on
//    where in the list it runs);
//  - forwarding (a rewrite that replaces %r by an existing %x, like x * 1 ->
//    x): only when %r and %x have the same dtype, sizes, strides and device,
//    neither storage is written by any node, and it would not make a graph
//    output alias a graph input or another output that eager returns as a
//    separate tensor (a view of %x may stand for %x: eager's result shares
//    that memory too).
// AliasClasses computes "shares storage" conservatively from schema alias
// annotations: a return `Tensor(a)` shares with the argument `Tensor(a)` (views,
// in-place results); lists share with their elements.

/// Whether op node n writes one of its arguments (in-place or out= op).
[[nodiscard]] bool writes_arguments(const ir::Node& n);
/// Whether op node n draws random numbers (the `random` tag, or a Generator argument).
[[nodiscard]] bool is_random(const ir::Node& n);
/// Whether n must stay even when no output is used: it writes an argument,
/// draws random numbers, or returns nothing.
[[nodiscard]] bool has_side_effects(const ir::Node& n);

/// Given a graph.   Do AliasClasses(g).   Result each value's storage class
/// (values that may share storage are in one class), which classes some node
/// writes, and which hold a graph input or output. A snapshot: recompute it
/// after mutating the graph (or call merge() for a value forwarded to another).
class AliasClasses {
 public:
  explicit AliasClasses(const ir::Graph& g);

  /// Whether a node writes the storage of v (through v or any alias of it).
  [[nodiscard]] bool is_written(const ir::Value* v);
  /// Whether a and b may share storage.
  [[nodiscard]] bool may_alias(const ir::Value* a, const ir::Value* b);
  /// Whether v's class holds a graph output / a graph input.
  [[nodiscard]] bool holds_output(const ir::Value* v);
  [[nodiscard]] bool holds_input(const ir::Value* v);
  /// v's class, as a number (equal for values that may share storage).
  [[nodiscard]] size_t class_of(const ir::Value* v);
  /// Records that a and b now share storage (after forwarding one to the other).
  void merge(const ir::Value* a, const ir::Value* b);
  /// Adds the sharing a node (new since the snapshot) introduces.
  void add_node(const ir::Node& n);

 private:
  struct ClassInfo {
    bool written = false;
    bool has_input = false;
    bool has_output = false;
  };
  size_t find(const ir::Value* v);
  size_t index_of(const ir::Value* v);
  void unite(const ir::Value* a, const ir::Value* b);

  std::unordered_map<const ir::Value*, size_t> index_;
  std::vector<size_t> parent_;
  std::vector<ClassInfo> info_;
};

/// Whether every use of `from` may read `to` instead: the rules of Note [When
/// a pass may drop, merge or forward a value] and equal tensor types (dtype,
/// sizes, strides, device; dtype and sizes known), so no reader sees another
/// layout.
[[nodiscard]] bool can_forward(const ir::Value* from, const ir::Value* to, AliasClasses& aliases);

}  // namespace kiln::passes
