// nodes_to_recompute: the minimum cut of Note [Choosing what to save].
#include "capture/SavePlan.h"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <unordered_map>

#include "capture/MaxFlow.h"
#include "eager/core/Error.h"
#include "eager/dispatch/Dispatcher.h"

namespace kiln::capture {

namespace {

constexpr int64_t kUnknownRankElements = int64_t{1} << 20;
constexpr int64_t kUnknownDTypeBytes = 4;
constexpr int64_t kMaxCountedBytes = int64_t{1} << 40;  // 1 TiB: larger tensors cost the same
/// Distances from the backward break ties up to this many nodes away.
constexpr int64_t kMaxDistance = 3;
/// A reduction is recomputable when its input is at most this many times its output's bytes.
constexpr int64_t kCheapReductionRatio = 4;
/// Copies and fills without the `pointwise` tag that are as cheap as one (a dtype cast, `contiguous`).
constexpr std::array<std::string_view, 5> kCheapCopies = {"kiln::_to_copy", "kiln::clone", "kiln::zeros_like",
                                                          "kiln::ones_like", "kiln::full_like"};

bool has_tensor_output(const ir::Node* n) {
  return std::any_of(n->outputs().begin(), n->outputs().end(), [](const ir::Value* v) { return v->type().is_tensor(); });
}

bool has_tag(const ir::Node* n, std::string_view tag) {
  return n->kind() == ir::NodeKind::Op && n->op().entry().has_tag(tag);
}

int64_t tensor_input_bytes(const ir::Node* n) {
  int64_t bytes = 0;
  for (const ir::Value* v : n->inputs()) bytes = std::min(kMaxCountedBytes, bytes + estimated_bytes(v->type()));
  return bytes;
}

int64_t output_bytes(const ir::Node* n) {
  int64_t bytes = 0;
  for (const ir::Value* v : n->outputs()) bytes = std::min(kMaxCountedBytes, bytes + estimated_bytes(v->type()));
  return bytes;
}

/// A view op's tensor outputs, and a list unpacked from a view op's list, alias their input's storage.
bool aliases_input(const ir::Value* v) {
  const ir::Node* n = v->node();
  if (n->kind() == ir::NodeKind::ListUnpack) n = n->input(0)->node();
  return has_tag(n, "view");
}

class CutBuilder {
 public:
  CutBuilder(const std::vector<ir::Node*>& forward_nodes, const BackwardReads& backward_reads,
             const std::unordered_set<const ir::Value*>& written_inputs)
      : forward_nodes_(forward_nodes), backward_reads_(backward_reads.values), read_whole_(backward_reads.read_whole) {
    for (const ir::Node* n : forward_nodes) {
      for (const ir::Value* v : n->outputs()) forward_defined_.insert(v);
    }
    mark_touched_in_place(written_inputs);
    measure_distances();
  }

  std::unordered_set<const ir::Node*> run() {
    MaxFlow flow;
    const size_t source = flow.add_vertex();
    const size_t sink = flow.add_vertex();
    std::unordered_map<const ir::Node*, size_t> compute_vertex;
    std::unordered_map<const ir::Value*, size_t> value_vertex;
    for (const ir::Node* n : forward_nodes_) {
      compute_vertex[n] = flow.add_vertex();
      for (const ir::Value* v : n->outputs()) value_vertex[v] = flow.add_vertex();
    }
    const MaxFlow::Capacity per_byte = kMaxDistance * static_cast<int64_t>(value_vertex.size() + 1) + 1;
    for (const ir::Node* n : forward_nodes_) {
      const size_t c = compute_vertex.at(n);
      const bool recomputable = may_recompute(n);
      if (!recomputable) flow.add_edge(source, c, MaxFlow::kUncuttable);
      for (const ir::Value* u : n->inputs()) {
        if (forward_defined_.count(u) != 0) flow.add_edge(value_vertex.at(u), c, MaxFlow::kUncuttable);
      }
      for (const ir::Value* v : n->outputs()) flow.add_edge(c, value_vertex.at(v), save_cost(v, recomputable, per_byte));
    }
    for (const ir::Value* v : backward_reads_) flow.add_edge(value_vertex.at(v), sink, MaxFlow::kUncuttable);
    const MaxFlow::Capacity cut = flow.max_flow(source, sink);
    KILN_CHECK(cut < MaxFlow::kUncuttable, "partition_joint: the backward needs a forward value that can be neither "
               "saved nor recomputed (an internal error)");
    const std::vector<bool> source_side = flow.source_side();
    std::unordered_set<const ir::Node*> recompute;
    for (const ir::Node* n : forward_nodes_) {
      if (!source_side[compute_vertex.at(n)]) recompute.insert(n);
    }
    return recompute;
  }

 private:
  /// Whether the backward may compute n again (Note [Choosing what to save]).
  bool may_recompute(const ir::Node* n) const {
    if (!has_tensor_output(n)) return true;
    for (const ir::Value* v : n->outputs()) {
      if (touched_in_place_.count(v) != 0) return false;
    }
    for (const ir::Value* v : n->inputs()) {
      if (touched_in_place_.count(v) != 0) return false;
    }
    if (n->kind() != ir::NodeKind::Op) return true;
    const OperatorEntry& op = n->op().entry();
    if (op.has_tag("inplace")) return false;
    if (!op.has_tag("view") && materialised_in_backward(n)) return false;
    if (op.has_tag("random")) return false;
    if (op.has_tag("view") || op.has_tag("pointwise") || op.has_tag("factory")) return true;
    const std::string name = n->op().name().str();
    if (std::find(kCheapCopies.begin(), kCheapCopies.end(), name) != kCheapCopies.end()) return true;
    if (op.has_tag("reduction")) return tensor_input_bytes(n) <= kCheapReductionRatio * output_bytes(n);
    return false;
  }

  /// Whether the backward, recomputing n, would have to hold one of its outputs in memory: the
  /// output (or a view of it) is read whole by the backward (BackwardReads::read_whole).
  bool materialised_in_backward(const ir::Node* n) const {
    std::vector<const ir::Value*> work(n->outputs().begin(), n->outputs().end());
    while (!work.empty()) {
      const ir::Value* v = work.back();
      work.pop_back();
      if (read_whole_.count(v) != 0) return true;
      for (const ir::Use& use : v->uses()) {
        for (const ir::Value* out : use.user->outputs()) {
          if (forward_defined_.count(out) != 0 && aliases_input(out)) work.push_back(out);
        }
      }
    }
    return false;
  }

  /// The capacity of C(n) -> O(v): what having v in the backward without recomputing n costs.
  MaxFlow::Capacity save_cost(const ir::Value* v, bool recomputable, MaxFlow::Capacity per_byte) const {
    if (recomputable && (!v->type().is_tensor() || aliases_input(v))) return MaxFlow::kUncuttable;
    const int64_t bytes = v->type().is_tensor() ? estimated_bytes(v->type()) : 8;
    const MaxFlow::Capacity limit = (MaxFlow::kUncuttable - 1 - kMaxDistance) / per_byte;
    return std::min<MaxFlow::Capacity>(bytes, limit) * per_byte + distance_.at(v);
  }

  /// The values an in-place op takes (their storage holds other contents afterwards; the op's result
  /// is a new value) and the graph inputs a run writes back into, with every value sharing storage
  /// with them through views.
  void mark_touched_in_place(const std::unordered_set<const ir::Value*>& written_inputs) {
    std::vector<const ir::Value*> work(written_inputs.begin(), written_inputs.end());
    for (const ir::Node* n : forward_nodes_) {
      if (has_tag(n, "inplace")) work.insert(work.end(), n->inputs().begin(), n->inputs().end());
    }
    while (!work.empty()) {
      const ir::Value* v = work.back();
      work.pop_back();
      const bool holds_storage = v->type().is_tensor() || v->type().kind() == ir::Type::Kind::List;
      if (!holds_storage || !touched_in_place_.insert(v).second) continue;
      if (aliases_input(v)) {
        const ir::Node* view = v->node()->kind() == ir::NodeKind::ListUnpack ? v->node()->input(0)->node() : v->node();
        for (const ir::Value* base : view->inputs()) work.push_back(base);
      }
      for (const ir::Use& use : v->uses()) {
        for (const ir::Value* out : use.user->outputs()) {
          if (forward_defined_.count(out) != 0 && aliases_input(out)) work.push_back(out);
        }
      }
    }
  }

  /// distance_[v]: how many nodes the backward would recompute to get from v to the nearest value it
  /// reads (at most kMaxDistance); views and structural nodes compute nothing and do not count.
  void measure_distances() {
    for (const ir::Value* v : forward_defined_) distance_[v] = kMaxDistance;
    for (const ir::Value* v : backward_reads_) distance_[v] = 0;
    for (auto it = forward_nodes_.rbegin(); it != forward_nodes_.rend(); ++it) {
      const ir::Node* n = *it;
      int64_t nearest = kMaxDistance;
      for (const ir::Value* v : n->outputs()) nearest = std::min(nearest, distance_.at(v));
      const bool computes = n->kind() == ir::NodeKind::Op && has_tensor_output(n) && !has_tag(n, "view");
      const int64_t through = std::min(kMaxDistance, nearest + (computes ? 1 : 0));
      for (const ir::Value* u : n->inputs()) {
        auto d = distance_.find(u);
        if (d != distance_.end()) d->second = std::min(d->second, through);
      }
    }
  }

  const std::vector<ir::Node*>& forward_nodes_;
  const std::vector<const ir::Value*>& backward_reads_;
  const std::unordered_set<const ir::Value*>& read_whole_;
  std::unordered_set<const ir::Value*> forward_defined_;
  std::unordered_set<const ir::Value*> touched_in_place_;
  std::unordered_map<const ir::Value*, int64_t> distance_;
};

}  // namespace

int64_t estimated_bytes(const ir::Type& t) {
  if (!t.is_tensor()) return 0;
  const ir::TensorType& tt = t.tensor_type();
  const int64_t item = tt.dtype ? itemsize(*tt.dtype) : kUnknownDTypeBytes;
  if (!tt.sizes) return kUnknownRankElements * item;
  int64_t bytes = item;
  for (const ir::SymbolicSize& d : *tt.sizes) {
    const int64_t extent = d.is_concrete() ? d.value() : kSymbolExtent;
    if (extent == 0) return 0;
    bytes = bytes > kMaxCountedBytes / extent ? kMaxCountedBytes : bytes * extent;
  }
  return std::min(bytes, kMaxCountedBytes);
}

std::unordered_set<const ir::Node*> nodes_to_recompute(const std::vector<ir::Node*>& forward_nodes,
                                                       const BackwardReads& backward_reads,
                                                       const std::unordered_set<const ir::Value*>& written_inputs) {
  if (backward_reads.values.empty()) return {};
  return CutBuilder(forward_nodes, backward_reads, written_inputs).run();
}

bool reads_whole(const ir::Node& n) {
  if (n.kind() != ir::NodeKind::Op) return true;
  const OperatorEntry& op = n.op().entry();
  if (op.has_tag("inplace") || op.has_tag("random")) return true;
  if (op.has_tag("view")) {
    for (const ir::Value* out : n.outputs()) {
      for (const ir::Use& use : out->uses()) {
        if (reads_whole(*use.user)) return true;
      }
    }
    return false;
  }
  if (op.has_tag("pointwise") || op.has_tag("reduction")) return false;
  const std::string name = n.op().name().str();
  return std::find(kCheapCopies.begin(), kCheapCopies.end(), name) == kCheapCopies.end();
}

}  // namespace kiln::capture
