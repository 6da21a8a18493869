// Device workers: a ready queue per accelerator device, drained by that
// device's thread. See Note [A ready queue per device] (Engine.h).
#include "eager/autograd/DeviceWorkers.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <queue>
#include <utility>

#include "eager/core/Error.h"

namespace kiln::autograd {

namespace {

thread_local Device t_worker_device;  // CPU unless this thread is a device worker

struct DeviceEntry {
  uint64_t seq;
  std::shared_ptr<GraphTask> task;
  Node* node;
  bool operator<(const DeviceEntry& o) const { return seq < o.seq; }  // newest first, across tasks
};

/// A device's ready queue and the thread that drains it. Never destroyed:
/// the thread outlives every static (it blocks on the queue at exit).
class DeviceWorker {
 public:
  explicit DeviceWorker(Device device) : device_(device), thread_([this] { loop(); }) { thread_.detach(); }

  void push(DeviceEntry entry) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push(std::move(entry));
    }
    not_empty_.notify_one();
  }

  [[nodiscard]] std::thread::id id() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return id_;
  }

 private:
  void loop() {
    t_worker_device = device_;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      id_ = std::this_thread::get_id();
    }
    for (;;) {
      DeviceEntry entry;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        not_empty_.wait(lock, [this] { return !queue_.empty(); });
        entry = queue_.top();
        queue_.pop();
      }
      run_ready_node(entry.task, entry.node);
      {
        std::lock_guard<std::mutex> lock(entry.task->mutex);
        --entry.task->outstanding;
      }
      entry.task->work_returned.notify_all();
    }
  }

  Device device_;
  mutable std::mutex mutex_;
  std::condition_variable not_empty_;
  std::priority_queue<DeviceEntry> queue_;
  std::thread::id id_;
  std::thread thread_;
};

DeviceWorker& worker_for(Device device) {
  static std::mutex mutex;
  static auto* workers = new std::map<std::pair<int, int>, DeviceWorker*>();  // leaked: see DeviceWorker
  KILN_INTERNAL_ASSERT(!device.is_cpu());
  std::lock_guard<std::mutex> lock(mutex);
  DeviceWorker*& w = (*workers)[{static_cast<int>(device.type()), device.index() < 0 ? 0 : device.index()}];
  if (w == nullptr) w = new DeviceWorker(device);
  return *w;
}

}  // namespace

void enqueue_on_device(Device device, const std::shared_ptr<GraphTask>& task, Node* node) {
  worker_for(device).push(DeviceEntry{node->sequence_nr(), task, node});
}

Device current_worker_device() { return t_worker_device; }

std::thread::id device_worker_thread_id(Device device) {
  DeviceWorker& w = worker_for(device);
  // The worker records its id when it starts; wait for that.
  for (;;) {
    const std::thread::id id = w.id();
    if (id != std::thread::id()) return id;
    std::this_thread::yield();
  }
}

}  // namespace kiln::autograd
