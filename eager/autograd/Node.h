// Node and Edge: the recorded graph. Every differentiable op that ran with a
// tensor requiring grad leaves one Node (MulBackward0, ...) whose next edges
// point at the nodes of its inputs; backward is a dependency-counted walk of
// these edges (Engine.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "eager/ops/Tensor.h"

namespace kiln::autograd {

class Node;
using variable_list = std::vector<Tensor>;

/// Where a gradient goes: input `input_nr` of `function`.
struct Edge {
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;

  [[nodiscard]] bool is_valid() const { return function != nullptr; }
};

/// What a node's input (its forward op's output) looked like, so gradients
/// can be checked and reduced to the right shape and dtype.
struct InputMetadata {
  DimVector shape;
  DType dtype = DType::Float32;
  Device device;
};

/// Runs before a node on its incoming gradients; may return replacements
/// (an undefined tensor keeps the original). Tensor.register_hook uses these.
using PreHook = std::function<variable_list(const variable_list& grads)>;
/// Runs after a node with (its outputs, its inputs); may replace the outputs.
using PostHook = std::function<variable_list(const variable_list& outputs, const variable_list& inputs)>;

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// Runs pre-hooks, apply, then post-hooks.
  variable_list operator()(variable_list&& grads);
  /// The backward formula: gradients of the forward outputs in, of the inputs out.
  virtual variable_list apply(variable_list&& grads) = 0;
  /// "MulBackward0"; by default the demangled class name.
  [[nodiscard]] virtual std::string name() const;
  /// Drops saved tensors after a backward without retain_graph.
  virtual void release_variables() {}

  /// Creation order; the engine runs newer nodes first.
  [[nodiscard]] uint64_t sequence_nr() const { return sequence_nr_; }

  [[nodiscard]] const std::vector<Edge>& next_edges() const { return next_edges_; }
  [[nodiscard]] const Edge& next_edge(size_t i) const { return next_edges_[i]; }
  void set_next_edges(std::vector<Edge> edges) { next_edges_ = std::move(edges); }
  void add_next_edge(Edge e) { next_edges_.push_back(std::move(e)); }
  [[nodiscard]] size_t num_outputs() const { return next_edges_.size(); }

  /// Records a forward output's metadata; returns its input number here.
  uint32_t add_input_metadata(const Tensor& t);
  /// The same from metadata alone (a node whose forward ran on a device
  /// kiln has no tensors for, in the engine's tests).
  uint32_t add_input_metadata(InputMetadata meta);
  [[nodiscard]] size_t num_inputs() const { return input_metadata_.size(); }
  [[nodiscard]] const InputMetadata& input_metadata(size_t i) const { return input_metadata_[i]; }

  /// Whether gradient i is wanted (its edge leads somewhere).
  [[nodiscard]] bool should_compute_output(size_t i) const { return i < next_edges_.size() && next_edges_[i].is_valid(); }

  void add_pre_hook(PreHook hook) { pre_hooks_.push_back(std::move(hook)); }
  /// Hooks on one input (Tensor.register_hook on a non-leaf output); returns a handle id.
  /// `run_last`: after every other hook of the input (retain_grad's hook, as in PyTorch).
  size_t add_tensor_pre_hook(uint32_t input_nr, std::function<Tensor(const Tensor&)> hook, bool run_last = false);
  void remove_tensor_pre_hook(size_t id);
  void add_post_hook(PostHook hook) { post_hooks_.push_back(std::move(hook)); }
  [[nodiscard]] const std::vector<PostHook>& post_hooks() const { return post_hooks_; }

  /// Where the forward op was called from (set when anomaly detection is on).
  void set_forward_trace(std::string trace) { forward_trace_ = std::move(trace); }
  [[nodiscard]] const std::string& forward_trace() const { return forward_trace_; }

 private:
  struct TensorHook {
    size_t id;
    uint32_t input_nr;
    std::function<Tensor(const Tensor&)> fn;
    bool run_last;
  };
  uint64_t sequence_nr_;
  std::vector<Edge> next_edges_;
  std::vector<InputMetadata> input_metadata_;
  std::vector<PreHook> pre_hooks_;
  std::vector<TensorHook> tensor_hooks_;
  std::vector<PostHook> post_hooks_;
  std::string forward_trace_;
};

/// Raised by nodes whose formula is missing (ops without derivatives).
class NotImplementedNode final : public Node {
 public:
  explicit NotImplementedNode(std::string op) : op_(std::move(op)) {}
  variable_list apply(variable_list&& grads) override;
  [[nodiscard]] std::string name() const override { return "NotImplemented"; }

 private:
  std::string op_;
};

}  // namespace kiln::autograd
