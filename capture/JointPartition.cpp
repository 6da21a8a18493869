// partition_joint: the forward and backward graphs of a joint capture.
#include "capture/JointPartition.h"

#include <unordered_map>
#include <unordered_set>

#include "eager/core/Error.h"
#include "eager/dispatch/Dispatcher.h"
#include "ir/Clone.h"

namespace kiln::capture {

namespace {

class Partitioner {
 public:
  Partitioner(const ir::Graph& joint, size_t num_forward_nodes, size_t num_forward_inputs,
              size_t num_forward_outputs)
      : joint_(joint), num_forward_inputs_(num_forward_inputs), num_forward_outputs_(num_forward_outputs) {
    const std::vector<ir::Node*> nodes = joint.nodes();
    KILN_CHECK(num_forward_nodes <= nodes.size() && num_forward_inputs <= joint.inputs().size() &&
                   num_forward_outputs <= joint.outputs().size(),
               "partition_joint: the split points lie outside the graph");
    forward_nodes_.assign(nodes.begin(), nodes.begin() + static_cast<std::ptrdiff_t>(num_forward_nodes));
    backward_nodes_.assign(nodes.begin() + static_cast<std::ptrdiff_t>(num_forward_nodes), nodes.end());
    for (const ir::Node* n : forward_nodes_) {
      for (const ir::Value* v : n->outputs()) forward_defined_.insert(v);
    }
    for (size_t i = 0; i < joint.inputs().size(); ++i) input_index_[joint.inputs()[i]] = i;
    for (size_t i = 0; i < num_forward_inputs; ++i) {
      const ir::Type& t = joint.inputs()[i]->type();
      if (!t.is_tensor() || !t.tensor_type().sizes) continue;
      for (const ir::SymbolicSize& d : *t.tensor_type().sizes) symbolic_ = symbolic_ || d.is_symbolic();
    }
  }

  JointPartition run() {
    JointPartition p;
    p.forward = std::make_unique<ir::Graph>();
    p.backward = std::make_unique<ir::Graph>();
    build_forward(*p.forward);
    // The backward's needs: what its nodes and the gradients read, seen
    // through the forward values it recomputes.
    for (const ir::Node* n : backward_nodes_) {
      for (const ir::Value* v : n->inputs()) need(v);
    }
    for (size_t i = num_forward_outputs_; i < joint_.outputs().size(); ++i) need(joint_.outputs()[i]);
    build_backward(*p.backward, *p.forward, &p);
    return p;
  }

 private:
  void build_forward(ir::Graph& fwd) {
    for (size_t i = 0; i < num_forward_inputs_; ++i) {
      const ir::Value* in = joint_.inputs()[i];
      fmap_[in] = fwd.add_input(in->type(), in->name());
    }
    for (const ir::Node* n : forward_nodes_) {
      for (const ir::Value* v : n->inputs()) {
        KILN_CHECK(fmap_.count(v) != 0, "partition_joint: forward node ", n->kind_name(),
                   " reads a value the forward does not have");
      }
      fwd.append(ir::clone_node(*n, fwd, fmap_));
    }
    for (size_t i = 0; i < num_forward_outputs_; ++i) fwd.add_output(fmap_.at(joint_.outputs()[i]));
  }

  /// Whether forward node n is recomputed in the backward instead of saved.
  bool recompute(const ir::Node* n) const {
    bool tensor_output = false;
    for (const ir::Value* v : n->outputs()) tensor_output = tensor_output || v->type().is_tensor();
    if (!tensor_output) return true;
    if (n->kind() != ir::NodeKind::Op || n->outputs().size() != 1) return false;
    const OperatorEntry& op = n->op().entry();
    if (!(op.has_tag("pointwise") || op.has_tag("view")) || op.has_tag("random") || op.has_tag("inplace")) {
      return false;
    }
    size_t tensor_inputs = 0;
    for (const ir::Value* v : n->inputs()) {
      if (!v->type().is_tensor()) continue;
      ++tensor_inputs;
      // Recomputing it must not force saving more: its tensor input is an input, saved or recomputed.
      if (forward_defined_.count(v) != 0 && saved_set_.count(v) == 0 && recomputed_.count(v->node()) == 0) {
        return false;
      }
    }
    return tensor_inputs == 1;
  }

  /// Marks what the backward must receive or recompute to have v.
  void need(const ir::Value* v) {
    if (!needed_.insert(v).second) return;
    if (forward_defined_.count(v) == 0) {
      if (input_index_.count(v) != 0) needed_inputs_.insert(input_index_.at(v));
      return;  // a backward value: built in order
    }
    const ir::Node* n = v->node();
    if (recompute(n)) {
      if (recomputed_.insert(n).second) {
        for (const ir::Value* in : n->inputs()) need(in);
      }
      return;
    }
    saved_set_.insert(v);
    saved_.push_back(v);
  }

  void build_backward(ir::Graph& bwd, ir::Graph& fwd, JointPartition* p) {
    ir::ValueMap bmap;
    for (size_t i = 0; i < joint_.inputs().size(); ++i) {
      if (needed_inputs_.count(i) == 0) continue;
      const ir::Value* in = joint_.inputs()[i];
      bmap[in] = bwd.add_input(i < num_forward_inputs_ ? in->type() : backward_input_type(in->type()), in->name());
      p->backward_inputs.push_back(i);
    }
    for (const ir::Value* v : saved_) {
      bmap[v] = bwd.add_input(backward_input_type(v->type()), v->name());
      fwd.add_output(fmap_.at(v));
    }
    p->num_saved = saved_.size();
    for (const ir::Node* n : forward_nodes_) {
      if (recomputed_.count(n) != 0) bwd.append(ir::clone_node(*n, bwd, bmap));
    }
    for (const ir::Node* n : backward_nodes_) bwd.append(ir::clone_node(*n, bwd, bmap));
    for (size_t i = num_forward_outputs_; i < joint_.outputs().size(); ++i) {
      bwd.add_output(bmap.at(joint_.outputs()[i]));
    }
  }

  /// A saved value's or grad_output's type as a backward input: as recorded, except that in a symbolic
  /// graph (an input typed with symbols) a tensor's sizes and strides are left open, since they follow the
  /// symbols (the capture typed them at the capturing call's sizes).
  [[nodiscard]] ir::Type backward_input_type(const ir::Type& t) const {
    if (!symbolic_ || !t.is_tensor()) return t;
    ir::TensorType open = t.tensor_type();
    open.sizes.reset();
    open.strides.reset();
    return ir::Type::tensor(open);
  }

  const ir::Graph& joint_;
  bool symbolic_ = false;
  size_t num_forward_inputs_;
  size_t num_forward_outputs_;
  std::vector<ir::Node*> forward_nodes_;
  std::vector<ir::Node*> backward_nodes_;
  std::unordered_set<const ir::Value*> forward_defined_;
  std::unordered_map<const ir::Value*, size_t> input_index_;
  ir::ValueMap fmap_;
  std::unordered_set<const ir::Value*> needed_;
  std::unordered_set<size_t> needed_inputs_;
  std::unordered_set<const ir::Node*> recomputed_;
  std::unordered_set<const ir::Value*> saved_set_;
  std::vector<const ir::Value*> saved_;
};

}  // namespace

JointPartition partition_joint(const ir::Graph& joint, size_t num_forward_nodes, size_t num_forward_inputs,
                               size_t num_forward_outputs) {
  return Partitioner(joint, num_forward_nodes, num_forward_inputs, num_forward_outputs).run();
}

}  // namespace kiln::capture
