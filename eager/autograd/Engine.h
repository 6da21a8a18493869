// The Engine: runs backward over the recorded graph. See Note [How backward runs].
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "eager/autograd/Node.h"

namespace kiln::autograd {

// Note [How backward runs]
// ------------------------
// execute() seeds a GraphRoot with the given gradients, counts for every
// reachable node how many edges lead into it (its dependencies), and runs a
// ready queue ordered by sequence number (newest node first). Each node's
// incoming gradients are summed in an InputBuffer; it runs once its count
// reaches zero; its outputs are checked against the metadata of the inputs
// they flow to (reduced to the input's shape when they were broadcast, cast to
// its dtype) and passed on. autograd.grad() asks for the gradients at given
// edges: they are captured there and the nodes behind them (and every node
// not on a path to them) are not run. All state of one backward lives in its
// GraphTask (GraphTask.h), so threads run independent backwards at once and a
// backward inside a backward (a hook, a custom Function) simply nests.
// Without retain_graph, each node frees its saved tensors after it runs.

// Note [A ready queue per device]
// -------------------------------
// A node runs on the device of its first input (node_device: where its
// forward output lived). CPU nodes run on the thread that called backward,
// from the GraphTask's own ready queue; each accelerator device has one
// ReadyQueue, ordered by sequence number across all backwards, drained by
// that device's worker thread, started on first use (DeviceWorkers.h). The
// dependency counts and input buffers stay in the GraphTask, shared: whoever
// finishes a node passes its gradients on and queues each node that became
// ready on the queue of that node's device; the caller waits while workers
// hold nodes of its task. The first exception a node raises (with the node's
// name added, as on the caller) is carried back and rethrown by the caller
// once the workers have finished what they were running; no further node of
// that task runs. A backward called from a worker (reentrant: a hook, a
// custom Function) runs that device's nodes and CPU nodes on the worker
// itself, so it cannot wait on its own queue. When no node of a graph is on
// an accelerator (always today: kiln has no CUDA backend yet) execute() runs
// the same steps on the caller without taking any lock, as before.

struct Engine {
  /// Gradients at `outputs` (autograd.grad) or, when `outputs` is empty, {}.
  /// `inputs_to_accumulate` restricts accumulation into .grad to those leaves
  /// (backward(inputs=...)); empty means every leaf.
  static variable_list execute(const std::vector<Edge>& roots, const variable_list& grad_roots, bool keep_graph,
                               bool create_graph, const std::vector<Edge>& outputs, bool accumulate_grad);

  /// Runs `callback` after the current backward finishes (PyTorch's queue_callback).
  static void queue_callback(std::function<void()> callback);
};

/// Anomaly detection (kiln.autograd.set_detect_anomaly).
struct AnomalyMode {
  [[nodiscard]] static bool is_enabled();
  static void set_enabled(bool enabled);
  /// How nodes learn where they were created: set by the Python layer to
  /// return the current Python stack as text.
  static void set_trace_provider(std::string (*provider)());
  [[nodiscard]] static std::string current_trace();
};

/// Records the forward trace on `node` when anomaly mode is on.
void record_forward_trace(Node& node);

}  // namespace kiln::autograd
