// Work: the handle of a collective or point-to-point operation in flight.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "eager/distributed/Store.h"
#include "eager/ops/Tensor.h"

namespace kiln::distributed {

/// torch.distributed's Work: wait() blocks until the operation finished and
/// raises its error; the tensors it reads and writes stay alive until then.
class Work {
 public:
  virtual ~Work() = default;
  [[nodiscard]] virtual bool is_completed() = 0;
  /// Blocks until done; raises (RuntimeError) when the operation failed.
  virtual void wait() = 0;
  /// The rank a recv from any source got its message from (-1 otherwise).
  [[nodiscard]] virtual int source_rank() const { return -1; }
};

/// Work the process group's worker thread runs: completed by finish().
class QueuedWork final : public Work {
 public:
  QueuedWork(std::string what, std::vector<Tensor> tensors) : what_(std::move(what)), tensors_(std::move(tensors)) {}

  bool is_completed() override;
  void wait() override;
  /// Called by the worker: records the error (empty when none) and wakes waiters.
  void finish(std::string error);
  [[nodiscard]] const std::string& what() const { return what_; }

 private:
  std::string what_;
  std::vector<Tensor> tensors_;  // kept alive while the worker uses their memory
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::string error_;
};

/// How the caller waits for an operation: Async, through the Work later (or never), or Blocking, at
/// once (async_op=False). ProcessGroupGloo runs a blocking call on the caller's thread when nothing
/// else is queued (Note [Blocking calls on an idle group]); ProcessGroupNccl queues either on its stream.
enum class CallMode { Async, Blocking };

/// Work that was complete when it was returned (run on the caller's thread); wait() raises its error.
class CompletedWork final : public Work {
 public:
  explicit CompletedWork(std::string error = {}) : error_(std::move(error)) {}
  bool is_completed() override { return true; }
  void wait() override;

 private:
  std::string error_;
};

/// A send or recv posted on the caller's thread; wait() waits for the transport.
class PointToPointWork final : public Work {
 public:
  using Waiter = std::function<int()>;  // returns the peer rank; raises on failure
  PointToPointWork(std::string what, Tensor tensor, std::shared_ptr<void> buffer, Waiter waiter)
      : what_(std::move(what)), tensor_(std::move(tensor)), buffer_(std::move(buffer)), waiter_(std::move(waiter)) {}

  bool is_completed() override;
  void wait() override;
  [[nodiscard]] int source_rank() const override { return source_rank_; }

 private:
  std::string what_;
  Tensor tensor_;
  std::shared_ptr<void> buffer_;  // the transport's buffer over tensor_'s memory
  Waiter waiter_;
  std::mutex mutex_;
  bool done_ = false;
  std::string error_;
  int source_rank_ = -1;
};

}  // namespace kiln::distributed
