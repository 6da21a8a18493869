// ProcessGroupNccl: collectives and point-to-point messages over NCCL (CUDA tensors, one GPU per process).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "eager/cuda/CudaStream.h"
#include "eager/distributed/NcclLibrary.h"
#include "eager/distributed/ReduceOp.h"
#include "eager/distributed/Store.h"
#include "eager/distributed/Work.h"
#include "eager/ops/Tensor.h"

namespace kiln::distributed {

// Note [NCCL streams and work]
// ----------------------------
// Each group has one communicator (ncclCommInitRank, its unique id passed from
// rank 0 through the kiln store) on one device, and one stream of its own that
// every NCCL call of the group is queued on. A collective:
//   1. makes the group's stream wait for an event recorded on the caller's
//      current stream, so the inputs' producers finish first;
//   2. queues the NCCL call on the group's stream (the host returns at once);
//   3. tells the caching allocator the tensors are used on the group's stream
//      (record_stream), so freeing them early cannot hand their memory to
//      another stream's work;
//   4. records a done event on the group's stream.
// NcclWork::wait() waits on the host for the done event (polling, bounded by the
// group's timeout: a peer that died or hangs turns into an error naming the
// operation, and the communicator is aborted so later calls fail fast; it never
// hangs forever), then makes the caller's current stream wait on it, so kernels
// queued afterwards see the result. Calls are queued in call order on every rank,
// which is what NCCL needs to match them; a mutex keeps two host threads from
// interleaving a grouped call. Empty tensors make no NCCL call (every rank's count
// is then 0, as for ProcessGroupGloo), but still get a Work ordered on the stream.

/// A communicator and whether it was aborted (shared by the group and its Work).
struct NcclCommunicator;

/// A collective queued on a ProcessGroupNccl's stream.
class NcclWork final : public Work {
 public:
  NcclWork(std::string what, std::vector<Tensor> tensors, std::unique_ptr<cuda::Event> done, int device,
           std::shared_ptr<NcclCommunicator> comm, Milliseconds timeout);
  bool is_completed() override;
  void wait() override;
  [[nodiscard]] int source_rank() const override { return source_rank_; }
  void set_source_rank(int rank) { source_rank_ = rank; }

 private:
  std::string what_;
  std::vector<Tensor> tensors_;
  std::unique_ptr<cuda::Event> done_;
  int device_;
  std::shared_ptr<NcclCommunicator> comm_;
  Milliseconds timeout_;
  int source_rank_ = -1;
};

/// One process's membership in a group of `size` processes on one CUDA device each.
class ProcessGroupNccl {
 public:
  /// Meets the other ranks through `store` (rank 0 publishes NCCL's unique id) and makes the
  /// communicator on `device` (-1: the current device). Raises (RuntimeError) naming what is
  /// missing when NCCL does not load or there is no CUDA device.
  ProcessGroupNccl(std::shared_ptr<Store> store, int rank, int size, Milliseconds timeout, int device);
  ~ProcessGroupNccl();
  ProcessGroupNccl(const ProcessGroupNccl&) = delete;
  ProcessGroupNccl& operator=(const ProcessGroupNccl&) = delete;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] int device() const { return device_; }
  [[nodiscard]] Milliseconds timeout() const { return timeout_; }

  // The same operations, with the same contracts, as ProcessGroupGloo's (tensors dense,
  // contiguous, on this group's device); kiln.distributed calls either through one code path.
  // `mode` is taken for that shared signature: NCCL queues every call on the group's stream.
  std::shared_ptr<Work> all_reduce(const Tensor& tensor, ReduceOp op, CallMode mode = CallMode::Async);
  std::shared_ptr<Work> reduce(const Tensor& tensor, ReduceOp op, int root, CallMode mode = CallMode::Async);
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root, CallMode mode = CallMode::Async);
  std::shared_ptr<Work> all_gather(const Tensor& output, const Tensor& input, CallMode mode = CallMode::Async);
  std::shared_ptr<Work> gather(const Tensor& output, const Tensor& input, int root, CallMode mode = CallMode::Async);
  std::shared_ptr<Work> scatter(const Tensor& output, const Tensor& input, int root, CallMode mode = CallMode::Async);
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op,
                                       CallMode mode = CallMode::Async);
  std::shared_ptr<Work> all_to_all(const Tensor& output, const Tensor& input, std::vector<int64_t> output_counts,
                                   std::vector<int64_t> input_counts, CallMode mode = CallMode::Async);
  std::shared_ptr<Work> barrier(CallMode mode = CallMode::Async);
  /// NCCL has no tags: `tag` is accepted for the shared signature and ignored (as torch's NCCL group does).
  std::shared_ptr<Work> send(const Tensor& tensor, int dst, uint32_t tag);
  /// `src` must name a rank: NCCL cannot receive from any source.
  std::shared_ptr<Work> recv(const Tensor& tensor, int src, uint32_t tag);

 private:
  template <typename Launch>
  std::shared_ptr<Work> launch(const std::string& what, std::vector<Tensor> tensors, Launch&& call);
  void check_tensor(const Tensor& t, const char* what, const char* name) const;
  void check_root(int root, const char* what, const char* role) const;

  int rank_;
  int size_;
  int device_;
  Milliseconds timeout_;
  std::shared_ptr<Store> store_;
  std::shared_ptr<NcclCommunicator> comm_;
  cuda::Stream stream_;
  void* barrier_scratch_ = nullptr;  // 4 bytes of device memory barrier() reduces
  std::mutex launch_mutex_;
};

/// NCCL's datatype for `dtype`; raises (RuntimeError) for int16 and complex, which NCCL lacks
/// (complex sums and averages are run on the real view by the caller).
[[nodiscard]] ncclDataType_t nccl_data_type(DType dtype, const char* what);
/// NCCL's reduction for `op` on `dtype`: bool sums are MAX and products MIN (logical or/and, as
/// torch's NCCL group maps them); raises for AVG of integers and bools and MIN/MAX/PRODUCT of complex.
[[nodiscard]] ncclRedOp_t nccl_reduce_op(ReduceOp op, DType dtype, const char* what);

}  // namespace kiln::distributed
