// ProcessGroupGloo: collectives and point-to-point messages over Gloo (CPU tensors).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "eager/distributed/ReduceOp.h"
#include "eager/distributed/Store.h"
#include "eager/distributed/Work.h"
#include "eager/ops/Tensor.h"

namespace gloo {
class Context;
}

namespace kiln::distributed {

/// Where this process's Gloo device listens: a host name or address to bind
/// (127.0.0.1 for a job on one machine), or a network interface (GLOO_SOCKET_IFNAME).
struct GlooDeviceAddress {
  std::string hostname;
  std::string interface;
};

// Note [One worker thread per process group]
// ------------------------------------------
// Every collective is queued, with the next tag, to the group's one worker
// thread, which runs Gloo's algorithm and completes the Work. Tags are drawn
// on the caller's thread in call order, so the same call on every rank uses
// the same tag, and the worker runs collectives in that order: ranks agree on
// what each message belongs to without a handshake. A blocking call is queued
// and waited on, unless the group is idle (Note [Blocking calls on an idle
// group]). Sends and receives skip the queue (as torch's ProcessGroupGloo
// does): they are posted on the caller's thread on slots of their own
// (kPointToPointSlotPrefix), and wait() waits for the transport, so a send and
// a collective may overlap without deadlock.
//
// Note [Blocking calls on an idle group]
// --------------------------------------
// A blocking call (CallMode::Blocking: async_op=False) whose group has nothing
// queued and nothing running runs its collective on the caller's thread: the
// hand-off to the worker and the wake-up back cost two thread switches per
// call, which dominate small messages (an all_reduce of 64 floats on a group
// of one process: 15-19 us of CPU per call queued, 3.5 us run here). It still
// draws the next tag under queue_mutex_, and marks the group busy (busy_)
// while it runs, so the worker starts nothing queued after it until it
// finished: collectives run in tag order whichever thread runs them. When async work is queued or running, a blocking call is
// queued behind it as before (and waited on), so its order is kept.
//
// Tensors reach here dense and contiguous on the CPU; kiln.distributed makes
// contiguous copies of other tensors and copies results back after wait().

/// One process's membership in a group of `size` processes that met through `store`.
class ProcessGroupGloo {
 public:
  ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size, Milliseconds timeout,
                   const GlooDeviceAddress& address);
  ~ProcessGroupGloo();
  ProcessGroupGloo(const ProcessGroupGloo&) = delete;
  ProcessGroupGloo& operator=(const ProcessGroupGloo&) = delete;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] Milliseconds timeout() const { return timeout_; }

  /// In place: every rank's `tensor` becomes the reduction of all ranks' tensors.
  std::shared_ptr<Work> all_reduce(const Tensor& tensor, ReduceOp op, CallMode mode = CallMode::Async);
  /// In place on `root`'s rank: the reduction of all ranks' tensors. Other ranks'
  /// tensors are scratch space (kiln.distributed passes copies).
  std::shared_ptr<Work> reduce(const Tensor& tensor, ReduceOp op, int root, CallMode mode = CallMode::Async);
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root, CallMode mode = CallMode::Async);
  /// `output` holds size() copies of input's shape, rank 0's first.
  std::shared_ptr<Work> all_gather(const Tensor& output, const Tensor& input, CallMode mode = CallMode::Async);
  /// On root, `output` holds size() inputs in rank order; elsewhere it is ignored.
  std::shared_ptr<Work> gather(const Tensor& output, const Tensor& input, int root, CallMode mode = CallMode::Async);
  /// On root, `input` holds size() outputs in rank order; elsewhere it is ignored.
  std::shared_ptr<Work> scatter(const Tensor& output, const Tensor& input, int root, CallMode mode = CallMode::Async);
  /// `input` holds size() chunks of output's shape; this rank gets the reduction of
  /// its chunk. `input` is used as scratch space (kiln.distributed passes a copy).
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op,
                                       CallMode mode = CallMode::Async);
  /// Gloo's alltoallv: input's next `input_counts[i]` elements go to
  /// rank i; output's next `output_counts[i]` come from rank i. Rank i's
  /// input_counts[j] must equal rank j's output_counts[i]; counts may be zero.
  std::shared_ptr<Work> all_to_all(const Tensor& output, const Tensor& input, std::vector<int64_t> output_counts,
                                   std::vector<int64_t> input_counts, CallMode mode = CallMode::Async);
  std::shared_ptr<Work> barrier(CallMode mode = CallMode::Async);
  std::shared_ptr<Work> send(const Tensor& tensor, int dst, uint32_t tag);
  /// `src` -1 receives from any rank (Work::source_rank says which).
  std::shared_ptr<Work> recv(const Tensor& tensor, int src, uint32_t tag);

 private:
  using Job = std::function<void(uint32_t tag)>;
  /// Queues `job` with the next tag, or runs it here (Note [Blocking calls on an idle group]).
  std::shared_ptr<Work> enqueue(const std::string& what, std::vector<Tensor> tensors, Job job, CallMode mode);
  void run_worker();
  void check_rank(int r, const char* what, const char* role) const;
  [[nodiscard]] std::string failure_message(const std::string& what, const std::exception& e) const;

  int rank_;
  int size_;
  Milliseconds timeout_;
  std::shared_ptr<Store> store_;
  std::shared_ptr<gloo::Context> context_;

  uint32_t next_tag_ = 0;  // drawn under queue_mutex_
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<std::pair<std::shared_ptr<QueuedWork>, std::function<void()>>> queue_;
  bool busy_ = false;  // a collective is running (on the worker or a caller's thread)
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace kiln::distributed
