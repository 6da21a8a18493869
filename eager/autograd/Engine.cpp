// The backward pass. See Note [How backward runs] (Engine.h).
#include "eager/autograd/Engine.h"

#include <atomic>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "eager/autograd/AccumulateGrad.h"
#include "eager/autograd/DeviceWorkers.h"
#include "eager/autograd/GraphTask.h"
#include "eager/autograd/GradMode.h"
#include "eager/autograd/InputBuffer.h"
#include "eager/autograd/Variable.h"
#include "eager/core/Error.h"
#include "eager/core/ProfilerEvents.h"

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
/// The graph tasks whose nodes this thread is running, innermost last
/// (Engine::queue_callback adds to the innermost).
thread_local std::vector<GraphTask*> t_tasks;

struct TaskScope {
  explicit TaskScope(GraphTask* task) { t_tasks.push_back(task); }
  ~TaskScope() { t_tasks.pop_back(); }
  TaskScope(const TaskScope&) = delete;
  TaskScope& operator=(const TaskScope&) = delete;
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

/// Applies `node` and checks its outputs; an error gets the node's name (or
/// its forward trace in anomaly mode).
variable_list call_node(Node& node, variable_list&& inputs, bool is_root) {
  // Two ranges, as torch names them (Note [What the profiler records]); torch
  // shows no range for the graph root either.
  std::optional<profiler::RecordScope> evaluate, apply;
  if (profiler::is_active() && !is_root) [[unlikely]] {
    evaluate.emplace("autograd::engine::evaluate_function: " + node.name(), "autograd");
    apply.emplace(node.name(), "autograd");
  }
  try {
    variable_list grads = node(std::move(inputs));
    validate_outputs(node, grads);
    return grads;
  } catch (const Error& e) {
    std::string msg = e.message();
    if (AnomalyMode::is_enabled() && !node.forward_trace().empty()) {
      msg += "\n\nError detected in " + node.name() + ". Traceback of forward call that caused the error:\n" +
             node.forward_trace();
    } else if (msg.find(node.name()) == std::string::npos && !is_root) {
      msg += "\n(raised while computing the gradient in " + node.name() + ")";
    }
    throw Error(e.kind(), msg, e.file(), e.line());
  }
}

/// Whether the task's calling thread runs nodes of `device` itself.
bool runs_locally(const GraphTask& task, Device device) {
  return device.is_cpu() || device.is_meta() || device == task.owner_device;  // meta: no device, no worker
}

/// The inputs of `node`, captured where autograd.grad asked; false when the
/// node need not run. Caller holds the task's lock when others share it.
bool take_inputs(GraphTask& task, Node* node, variable_list& inputs) {
  if (auto it = task.buffers.find(node); it != task.buffers.end()) {
    inputs = it->second.release();
    task.buffers.erase(it);
  }
  if (auto it = task.captures.find(node); it != task.captures.end()) {
    for (const auto& [input_nr, index] : it->second) task.results[index] = inputs[input_nr];
  }
  return node == task.root || !task.restricted || task.needed.count(node) || task.accumulate_targets.count(node);
}

/// Adds `node`'s output gradients to the input buffers of the nodes they flow
/// to and calls on_ready(next) for each node whose last dependency this was.
/// Both backward loops use it; the threaded one holds task.mutex around it.
template <typename OnReady>
void pass_gradients(GraphTask& task, Node* node, variable_list& grads, const OnReady& on_ready) {
  for (size_t i = 0; i < grads.size(); ++i) {
    const Edge& edge = node->next_edge(i);
    if (!edge.is_valid()) continue;
    Node* next = edge.function.get();
    auto [it, inserted] = task.buffers.try_emplace(next, next->num_inputs());
    it->second.add(edge.input_nr, std::move(grads[i]));
    if (--task.dependencies[next] == 0) on_ready(next);
  }
}

}  // namespace

void run_ready_node(const std::shared_ptr<GraphTask>& task_ptr, Node* node) {
  GraphTask& task = *task_ptr;
  variable_list inputs;
  {
    std::lock_guard<std::mutex> lock(task.mutex);
    if (task.error || !take_inputs(task, node, inputs)) return;
  }
  variable_list grads;
  try {
    TaskScope scope(&task);
    AutoGradMode grad_mode(task.create_graph);
    grads = call_node(*node, std::move(inputs), node == task.root);
  } catch (...) {
    std::lock_guard<std::mutex> lock(task.mutex);
    if (!task.error) task.error = std::current_exception();
    return;
  }
  if (!task.keep_graph) node->release_variables();
  std::lock_guard<std::mutex> lock(task.mutex);
  pass_gradients(task, node, grads, [&](Node* next) {
    const Device device = node_device(*next);
    if (runs_locally(task, device)) {
      task.local_ready.push({next->sequence_nr(), next});
    } else {
      ++task.outstanding;
      enqueue_on_device(device, task_ptr, next);
    }
  });
}

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
  KILN_CHECK(!t_tasks.empty(), "Final callbacks can only be installed during backward pass.");
  GraphTask& task = *t_tasks.back();
  std::lock_guard<std::mutex> lock(task.callbacks_mutex);
  task.callbacks.push_back(std::move(callback));
}

variable_list Engine::execute(const std::vector<Edge>& roots, const variable_list& grad_roots, bool keep_graph,
                              bool create_graph, const std::vector<Edge>& outputs, bool accumulate_grad) {
  KILN_CHECK(roots.size() == grad_roots.size(), "backward: got ", roots.size(), " roots but ", grad_roots.size(),
             " gradients");
  auto root = std::make_shared<GraphRoot>(roots, grad_roots);
  auto task_ptr = std::make_shared<GraphTask>();
  GraphTask& task = *task_ptr;
  task.keep_graph = keep_graph;
  task.create_graph = create_graph;
  task.root = root.get();
  task.owner_device = current_worker_device();

  // Dependencies: how many edges lead into each reachable node; whether any
  // runs on a device worker (Note [A ready queue per device]).
  bool uses_workers = false;
  {
    std::vector<Node*> stack{root.get()};
    std::unordered_set<Node*> seen{root.get()};
    while (!stack.empty()) {
      Node* node = stack.back();
      stack.pop_back();
      for (const Edge& e : node->next_edges()) {
        Node* child = e.function.get();
        if (child == nullptr) continue;
        ++task.dependencies[child];
        if (seen.insert(child).second) {
          stack.push_back(child);
          uses_workers = uses_workers || !runs_locally(task, node_device(*child));
        }
      }
    }
  }

  task.restricted = !outputs.empty();
  if (task.restricted) {
    task.needed = nodes_to_execute(root.get(), outputs);
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].is_valid()) continue;
      if (accumulate_grad) {
        task.accumulate_targets.insert(outputs[i].function.get());
      } else {
        task.captures[outputs[i].function.get()].emplace_back(outputs[i].input_nr, i);
      }
    }
  }
  task.results.resize(outputs.size());
  task.local_ready.push({root->sequence_nr(), root.get()});

  if (uses_workers) {
    // Shared with device workers: every step under the task's lock.
    std::unique_lock<std::mutex> lock(task.mutex);
    for (;;) {
      if (!task.error && !task.local_ready.empty()) {
        Node* node = task.local_ready.top().node;
        task.local_ready.pop();
        lock.unlock();
        run_ready_node(task_ptr, node);
        lock.lock();
        continue;
      }
      if (task.outstanding == 0) break;
      task.work_returned.wait(lock);
    }
    if (task.error) std::rethrow_exception(task.error);
  } else {
    // Everything on this thread: the same steps without locks.
    TaskScope scope(&task);
    AutoGradMode grad_mode(create_graph);
    while (!task.local_ready.empty()) {
      Node* node = task.local_ready.top().node;
      task.local_ready.pop();
      variable_list inputs;
      if (!take_inputs(task, node, inputs)) continue;
      variable_list grads = call_node(*node, std::move(inputs), node == root.get());
      if (!keep_graph) node->release_variables();
      pass_gradients(task, node, grads, [&](Node* next) { task.local_ready.push({next->sequence_nr(), next}); });
    }
  }

  {
    TaskScope scope(&task);  // a callback may queue another
    for (size_t i = 0; i < task.callbacks.size(); ++i) {
      std::function<void()> callback;
      {
        std::lock_guard<std::mutex> lock(task.callbacks_mutex);
        callback = task.callbacks[i];
      }
      callback();
    }
  }
  return std::move(task.results);
}

}  // namespace kiln::autograd
