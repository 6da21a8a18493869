// The backward pass. See Note [How backward runs] (Engine.h).
#include "eager/autograd/Engine.h"

#include <atomic>
#include <cmath>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "eager/autograd/AccumulateGrad.h"
#include "eager/autograd/GradMode.h"
#include "eager/autograd/InputBuffer.h"
#include "eager/autograd/Variable.h"
#include "eager/core/Error.h"

namespace kiln::autograd {

namespace {

/// Feeds the seed gradients into the root edges.
class GraphRoot final : public Node {
 public:
  GraphRoot(const std::vector<Edge>& roots, variable_list grads) : grads_(std::move(grads)) {
    set_next_edges(roots);
  }
  variable_list apply(variable_list&&) override { return grads_; }
  [[nodiscard]] std::string name() const override { return "GraphRoot"; }

 private:
  variable_list grads_;
};

std::atomic<bool> g_anomaly{false};
std::atomic<std::string (*)()> g_trace_provider{nullptr};
thread_local std::vector<std::vector<std::function<void()>>> t_callbacks;

struct ReadyEntry {
  uint64_t seq;
  Node* node;
  bool operator<(const ReadyEntry& o) const { return seq < o.seq; }  // newest first
};

bool has_nan(const Tensor& t) {
  if (!is_floating_point(t.dtype()) || t.numel() == 0) return false;
  Tensor f = to_dtype(t, DType::Float64);
  const double* p = f.data_ptr<double>();
  for (int64_t i = 0; i < f.numel(); ++i) {
    if (std::isnan(p[i])) return true;
  }
  return false;
}

/// Checks a node's outputs against where they flow; reduces broadcast
/// gradients and casts dtypes.
void validate_outputs(const Node& node, variable_list& outputs) {
  KILN_CHECK(outputs.size() == node.num_outputs(), "Function ", node.name(),
             " returned an incorrect number of gradients (expected ", node.num_outputs(), ", got ", outputs.size(),
             ")");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Edge& edge = node.next_edge(i);
    Tensor& grad = outputs[i];
    if (!edge.is_valid() || !grad.defined()) continue;
    const InputMetadata& meta = edge.function->input_metadata(edge.input_nr);
    const IntArrayRef want = meta.shape;
    if (!(grad.sizes().size() == want.size() && std::equal(want.begin(), want.end(), grad.sizes().begin()))) {
      grad = sum_to(grad, want, node.name().c_str());
    }
    if (grad.dtype() != meta.dtype) grad = to_dtype(grad, meta.dtype);
    if (AnomalyMode::is_enabled() && has_nan(grad)) {
      KILN_FAIL(Runtime, "Function '", node.name(), "' returned nan values in its ", i, "th output.");
    }
  }
}

/// Which nodes must run to produce gradients at `outputs`: those with a path to one.
std::unordered_set<Node*> nodes_to_execute(Node* root, const std::vector<Edge>& outputs) {
  std::unordered_set<Node*> targets;
  for (const Edge& e : outputs) targets.insert(e.function.get());
  std::unordered_map<Node*, bool> memo;
  std::unordered_set<Node*> needed;
  // Iterative post-order DFS.
  std::vector<std::pair<Node*, size_t>> stack{{root, 0}};
  std::unordered_set<Node*> visiting{root};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->num_outputs()) {
      const Edge& e = node->next_edge(next++);
      Node* child = e.function.get();
      if (child != nullptr && !memo.count(child) && !visiting.count(child)) {
        visiting.insert(child);
        stack.emplace_back(child, 0);
      }
      continue;
    }
    bool reaches = false;
    for (const Edge& e : node->next_edges()) {
      Node* child = e.function.get();
      if (child == nullptr) continue;
      if (targets.count(child) || memo[child]) reaches = true;
    }
    memo[node] = reaches;
    if (reaches) needed.insert(node);
    stack.pop_back();
  }
  return needed;
}

}  // namespace

bool AnomalyMode::is_enabled() { return g_anomaly.load(std::memory_order_relaxed); }
void AnomalyMode::set_enabled(bool enabled) { g_anomaly.store(enabled); }
void AnomalyMode::set_trace_provider(std::string (*provider)()) { g_trace_provider.store(provider); }
std::string AnomalyMode::current_trace() {
  auto* provider = g_trace_provider.load();
  return provider ? provider() : std::string();
}

void record_forward_trace(Node& node) {
  if (AnomalyMode::is_enabled()) node.set_forward_trace(AnomalyMode::current_trace());
}

void Engine::queue_callback(std::function<void()> callback) {
  KILN_CHECK(!t_callbacks.empty(), "Final callbacks can only be installed during backward pass.");
  t_callbacks.back().push_back(std::move(callback));
}

variable_list Engine::execute(const std::vector<Edge>& roots, const variable_list& grad_roots, bool keep_graph,
                              bool create_graph, const std::vector<Edge>& outputs, bool accumulate_grad) {
  KILN_CHECK(roots.size() == grad_roots.size(), "backward: got ", roots.size(), " roots but ", grad_roots.size(),
             " gradients");
  auto root = std::make_shared<GraphRoot>(roots, grad_roots);

  // Dependencies: how many edges lead into each reachable node.
  std::unordered_map<Node*, int> dependencies;
  {
    std::vector<Node*> stack{root.get()};
    std::unordered_set<Node*> seen{root.get()};
    while (!stack.empty()) {
      Node* node = stack.back();
      stack.pop_back();
      for (const Edge& e : node->next_edges()) {
        Node* child = e.function.get();
        if (child == nullptr) continue;
        ++dependencies[child];
        if (seen.insert(child).second) stack.push_back(child);
      }
    }
  }

  // autograd.grad / backward(inputs=...): capture or restrict.
  const bool restricted = !outputs.empty();
  std::unordered_set<Node*> needed;
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;  // node -> (input_nr, result index)
  std::unordered_set<Node*> accumulate_targets;
  if (restricted) {
    needed = nodes_to_execute(root.get(), outputs);
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].is_valid()) continue;
      if (accumulate_grad) {
        accumulate_targets.insert(outputs[i].function.get());
      } else {
        captures[outputs[i].function.get()].emplace_back(outputs[i].input_nr, i);
      }
    }
  }
  variable_list results(outputs.size());

  std::unordered_map<Node*, InputBuffer> buffers;
  std::priority_queue<ReadyEntry> ready;
  ready.push({root->sequence_nr(), root.get()});

  t_callbacks.emplace_back();
  struct PopCallbacks {
    ~PopCallbacks() { t_callbacks.pop_back(); }
  } pop_callbacks;

  AutoGradMode grad_mode(create_graph);
  while (!ready.empty()) {
    Node* node = ready.top().node;
    ready.pop();
    variable_list inputs;
    if (auto it = buffers.find(node); it != buffers.end()) {
      inputs = it->second.release();
      buffers.erase(it);
    }
    if (auto it = captures.find(node); it != captures.end()) {
      for (const auto& [input_nr, index] : it->second) results[index] = inputs[input_nr];
    }
    const bool run = node == root.get() || !restricted || needed.count(node) || accumulate_targets.count(node);
    if (!run) continue;

    variable_list grads;
    try {
      grads = (*node)(std::move(inputs));
      validate_outputs(*node, grads);
    } catch (const Error& e) {
      std::string msg = e.message();
      if (AnomalyMode::is_enabled() && !node->forward_trace().empty()) {
        msg += "\n\nError detected in " + node->name() + ". Traceback of forward call that caused the error:\n" +
               node->forward_trace();
      } else if (msg.find(node->name()) == std::string::npos && node != root.get()) {
        msg += "\n(raised while computing the gradient in " + node->name() + ")";
      }
      throw Error(e.kind(), msg, e.file(), e.line());
    }
    if (!keep_graph) node->release_variables();

    for (size_t i = 0; i < grads.size(); ++i) {
      const Edge& edge = node->next_edge(i);
      if (!edge.is_valid()) continue;
      Node* next = edge.function.get();
      auto [it, inserted] = buffers.try_emplace(next, next->num_inputs());
      it->second.add(edge.input_nr, std::move(grads[i]));
      if (--dependencies[next] == 0) ready.push({next->sequence_nr(), next});
    }
  }

  for (auto& callback : t_callbacks.back()) callback();
  return results;
}

}  // namespace kiln::autograd
