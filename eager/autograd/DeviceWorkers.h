// One ready queue and one worker thread per accelerator device, started on
// first use. See Note [A ready queue per device] (Engine.h).
#pragma once

#include <memory>
#include <thread>

#include "eager/autograd/GraphTask.h"

namespace kiln::autograd {

/// Runs one node of `task` (on whichever thread calls it): takes its inputs,
/// applies it, passes its gradients on and queues the nodes that became
/// ready. Defined by the engine (Engine.cpp); `task.mutex` must not be held.
void run_ready_node(const std::shared_ptr<GraphTask>& task, Node* node);

/// Queues `node` of `task` on `device`'s worker (starting it on first use).
/// The caller holds task->mutex and has counted the node in task->outstanding.
void enqueue_on_device(Device device, const std::shared_ptr<GraphTask>& task, Node* node);

/// The device this thread is the worker of, or CPU for any other thread.
[[nodiscard]] Device current_worker_device();

/// The thread id of `device`'s worker; starts it if needed (for tests).
[[nodiscard]] std::thread::id device_worker_thread_id(Device device);

}  // namespace kiln::autograd
