// GraphTask: the state of one backward call (Engine::execute), shared by the
// calling thread and the device workers that run its accelerator nodes. See
// Note [How backward runs] and Note [A ready queue per device] (Engine.h).
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "eager/autograd/InputBuffer.h"
#include "eager/autograd/Node.h"

namespace kiln::autograd {

/// A node whose dependencies are all met, ordered newest (highest sequence
/// number) first.
struct ReadyEntry {
  uint64_t seq;
  Node* node;
  bool operator<(const ReadyEntry& o) const { return seq < o.seq; }
};

struct GraphTask {
  bool keep_graph = false;
  bool create_graph = false;
  Node* root = nullptr;
  /// The device whose nodes the calling thread runs itself besides CPU ones:
  /// the worker's device when backward is called from a device worker.
  Device owner_device;

  std::unordered_map<Node*, int> dependencies;
  std::unordered_map<Node*, InputBuffer> buffers;
  // autograd.grad / backward(inputs=...): capture or restrict.
  bool restricted = false;
  std::unordered_set<Node*> needed;
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;  // node -> (input_nr, result)
  std::unordered_set<Node*> accumulate_targets;
  variable_list results;

  /// The calling thread's queue (CPU nodes and owner_device's).
  std::priority_queue<ReadyEntry> local_ready;

  // Used only when some node runs on a device worker.
  std::mutex mutex;
  std::condition_variable work_returned;  // a worker finished a node of this task
  int outstanding = 0;                    // nodes queued to or running on device workers
  std::exception_ptr error;               // the first node failure, rethrown to the caller

  std::mutex callbacks_mutex;
  std::vector<std::function<void()>> callbacks;  // Engine::queue_callback
};

/// The device a node runs on: its first input's (what its forward output
/// lived on), CPU for a node with no inputs (GraphRoot).
[[nodiscard]] inline Device node_device(const Node& node) {
  return node.num_inputs() > 0 ? node.input_metadata(0).device : Device();
}

}  // namespace kiln::autograd
