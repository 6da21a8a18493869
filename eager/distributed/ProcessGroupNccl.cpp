// ProcessGroupNccl: NCCL's collectives on a stream of the group's own. See Note [NCCL streams and work].
#include "eager/distributed/ProcessGroupNccl.h"

#include <chrono>
#include <cstring>
#include <thread>

#include "eager/core/Error.h"
#include "eager/cuda/CudaAllocator.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/cuda/DriverApi.h"

namespace kiln::distributed {

struct NcclCommunicator {
  ncclComm_t comm = nullptr;
  std::mutex mutex;
  bool aborted = false;
  std::string abort_reason;

  /// Aborts the communicator (every rank's pending NCCL work fails instead of waiting forever).
  void abort(const std::string& reason) {
    std::lock_guard<std::mutex> lock(mutex);
    if (aborted || comm == nullptr) return;
    aborted = true;
    abort_reason = reason;
    (void)nccl().ncclCommAbort(comm);
  }
  ~NcclCommunicator() {
    if (comm != nullptr && !aborted) (void)nccl().ncclCommDestroy(comm);
  }
};

namespace {

constexpr const char* kUniqueIdKey = "nccl_unique_id";
constexpr auto kPollInterval = std::chrono::microseconds(50);

std::string dtype_text(DType dtype) { return std::string(dtype_name(dtype)); }

/// The dtype NCCL moves and how many of it: complex numbers travel as pairs of reals.
std::pair<ncclDataType_t, size_t> wire_type(const Tensor& t, const char* what) {
  const auto n = static_cast<size_t>(t.numel());
  if (t.dtype() == DType::Complex64) return {kNcclFloat32, 2 * n};
  if (t.dtype() == DType::Complex128) return {kNcclFloat64, 2 * n};
  return {nccl_data_type(t.dtype(), what), n};
}

size_t wire_bytes(DType dtype) {
  switch (dtype) {
    case DType::Complex64: return 4;
    case DType::Complex128: return 8;
    default: return static_cast<size_t>(itemsize(dtype));
  }
}

}  // namespace

ncclDataType_t nccl_data_type(DType dtype, const char* what) {
  switch (dtype) {
    case DType::Float32: return kNcclFloat32;
    case DType::Float64: return kNcclFloat64;
    case DType::Float16: return kNcclFloat16;
    case DType::BFloat16: return kNcclBfloat16;
    case DType::Int8: return kNcclInt8;
    case DType::Int32: return kNcclInt32;
    case DType::Int64: return kNcclInt64;
    case DType::UInt8: return kNcclUint8;
    case DType::Bool: return kNcclUint8;
    default: break;
  }
  KILN_FAIL(Runtime, what, ": input tensor data type is not supported for the NCCL process group: ",
            dtype_text(dtype));
}

ncclRedOp_t nccl_reduce_op(ReduceOp op, DType dtype, const char* what) {
  if (dtype == DType::Bool) {
    KILN_CHECK(op != ReduceOp::Avg, what, ": Cannot use ReduceOp.AVG with boolean inputs");
    if (op == ReduceOp::Sum) return kNcclMax;      // logical or
    if (op == ReduceOp::Product) return kNcclMin;  // logical and
  }
  if (is_complex(dtype)) {
    KILN_CHECK(op == ReduceOp::Sum || op == ReduceOp::Avg, what, ": ReduceOp.", reduce_op_name(op),
               " is not supported for complex tensors (only SUM and AVG are)");
  }
  if (op == ReduceOp::Avg) {
    KILN_CHECK(is_floating_point(dtype) || is_complex(dtype), what,
               ": ReduceOp.AVG is only supported for floating-point and complex tensors, got ", dtype_text(dtype));
  }
  switch (op) {
    case ReduceOp::Sum: return kNcclSum;
    case ReduceOp::Avg: return kNcclAvg;
    case ReduceOp::Product: return kNcclProd;
    case ReduceOp::Min: return kNcclMin;
    case ReduceOp::Max: return kNcclMax;
  }
  KILN_FAIL(Value, what, ": unknown ReduceOp");
}

// ---- NcclWork ----

NcclWork::NcclWork(std::string what, std::vector<Tensor> tensors, std::unique_ptr<cuda::Event> done, int device,
                   std::shared_ptr<NcclCommunicator> comm, Milliseconds timeout)
    : what_(std::move(what)), tensors_(std::move(tensors)), done_(std::move(done)), device_(device),
      comm_(std::move(comm)), timeout_(timeout) {}

bool NcclWork::is_completed() {
  cuda::DeviceGuard guard(device_);
  return done_->query();
}

void NcclWork::wait() {
  cuda::DeviceGuard guard(device_);
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (!done_->query()) {
    ncclResult_t async_error = 0;
    if (!comm_->aborted) {
      check_nccl(nccl().ncclCommGetAsyncError(comm_->comm, &async_error), "ncclCommGetAsyncError");
    }
    if (async_error != 0 && async_error != kNcclInProgress) {
      const std::string message = nccl().ncclGetErrorString(async_error);
      comm_->abort(message);
      KILN_FAIL(Runtime, what_, " failed: NCCL reported ", message, " (ncclResult_t ", async_error,
                "); the communicator was aborted");
    }
    if (comm_->aborted) {
      KILN_FAIL(Runtime, what_, " failed: the NCCL communicator was aborted earlier (", comm_->abort_reason, ")");
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      comm_->abort(what_ + " timed out");
      KILN_FAIL(Runtime, what_, " timed out after ", timeout_.count(),
                " ms waiting for the other ranks (one died or hangs); the NCCL communicator was aborted");
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  // Kernels the caller queues next on its stream run after the collective.
  done_->wait(cuda::current_stream(device_));
  tensors_.clear();
}

// ---- ProcessGroupNccl ----

ProcessGroupNccl::ProcessGroupNccl(std::shared_ptr<Store> store, int rank, int size, Milliseconds timeout,
                                   int device)
    : rank_(rank), size_(size), device_(-1), timeout_(timeout), store_(std::move(store)) {
  KILN_CHECK_VALUE(size >= 1, "ProcessGroupNCCL: world_size must be positive, got ", size);
  KILN_CHECK_VALUE(rank >= 0 && rank < size, "ProcessGroupNCCL: rank ", rank, " is out of range for world_size ",
                   size);
  const NcclApi& api = nccl();  // raises naming every path tried when NCCL does not load
  KILN_CHECK(cuda::device_count() > 0, "ProcessGroupNCCL is only supported with GPUs, no GPUs found! (",
             cuda::unavailable_reason(), ")");
  device_ = cuda::checked_device(device);
  cuda::DeviceGuard guard(device_);

  ncclUniqueId id{};
  if (rank_ == 0) {
    check_nccl(api.ncclGetUniqueId(&id), "ncclGetUniqueId");
    store_->set(kUniqueIdKey, Bytes(id.internal, id.internal + kNcclUniqueIdBytes));
  } else {
    const Bytes value = store_->get(kUniqueIdKey);  // waits up to the store's timeout
    KILN_CHECK(value.size() == static_cast<size_t>(kNcclUniqueIdBytes), "ProcessGroupNCCL: rank 0 published an ",
               value.size(), "-byte NCCL unique id, expected ", kNcclUniqueIdBytes);
    std::memcpy(id.internal, value.data(), kNcclUniqueIdBytes);
  }
  comm_ = std::make_shared<NcclCommunicator>();
  check_nccl(api.ncclCommInitRank(&comm_->comm, size_, id, rank_), "ncclCommInitRank");
  stream_ = cuda::Stream::create(device_);
  cuda::CUdeviceptr scratch = 0;
  cuda::check(cuda::driver().cuMemAlloc(&scratch, sizeof(float)), "cuMemAlloc (ProcessGroupNCCL barrier)");
  barrier_scratch_ = reinterpret_cast<void*>(scratch);
}

ProcessGroupNccl::~ProcessGroupNccl() {
  try {
    cuda::DeviceGuard guard(device_);
    stream_.synchronize();
    if (barrier_scratch_ != nullptr) {
      (void)cuda::driver().cuMemFree(reinterpret_cast<cuda::CUdeviceptr>(barrier_scratch_));
    }
  } catch (...) {  // a destructor must not throw; the process is going away or the device failed
  }
}

void ProcessGroupNccl::check_tensor(const Tensor& t, const char* what, const char* name) const {
  KILN_CHECK(t.defined(), what, ": ", name, " is an undefined tensor");
  KILN_CHECK(t.device().is_cuda() && t.device().index() == device_, what,
             ": the NCCL backend takes CUDA tensors on this group's device cuda:", device_, ", got ", name, " on ",
             t.device().str());
  KILN_CHECK(t.is_contiguous(), what, ": ", name, " must be contiguous");
}

void ProcessGroupNccl::check_root(int root, const char* what, const char* role) const {
  KILN_CHECK_VALUE(root >= 0 && root < size_, what, ": ", role, " rank ", root, " is out of range for a group of ",
                   size_);
}

template <typename Launch>
std::shared_ptr<Work> ProcessGroupNccl::launch(const std::string& what, std::vector<Tensor> tensors, Launch&& call) {
  KILN_CHECK(!comm_->aborted, what, ": the NCCL communicator was aborted (", comm_->abort_reason, ")");
  cuda::DeviceGuard guard(device_);
  {
    cuda::Event inputs_ready;
    inputs_ready.record(cuda::current_stream(device_));
    inputs_ready.wait(stream_);
  }
  {
    std::lock_guard<std::mutex> lock(launch_mutex_);
    call(stream_.handle());
  }
  for (const Tensor& t : tensors) {
    if (t.defined() && t.numel() > 0) cuda::record_stream(t.storage()->data_ptr(), stream_);
  }
  auto done = std::make_unique<cuda::Event>();
  done->record(stream_);
  return std::make_shared<NcclWork>(what, std::move(tensors), std::move(done), device_, comm_, timeout_);
}

std::shared_ptr<Work> ProcessGroupNccl::all_reduce(const Tensor& tensor, ReduceOp op, CallMode /*mode*/) {
  check_tensor(tensor, "all_reduce", "tensor");
  const ncclRedOp_t red = nccl_reduce_op(op, tensor.dtype(), "all_reduce");
  const auto [type, count] = wire_type(tensor, "all_reduce");
  return launch("all_reduce", {tensor}, [&](CudaStreamHandle s) {
    if (count == 0) return;
    check_nccl(nccl().ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), count, type, red, comm_->comm, s),
               "ncclAllReduce");
  });
}

std::shared_ptr<Work> ProcessGroupNccl::reduce(const Tensor& tensor, ReduceOp op, int root, CallMode /*mode*/) {
  check_tensor(tensor, "reduce", "tensor");
  check_root(root, "reduce", "dst");
  const ncclRedOp_t red = nccl_reduce_op(op, tensor.dtype(), "reduce");
  const auto [type, count] = wire_type(tensor, "reduce");
  return launch("reduce", {tensor}, [&](CudaStreamHandle s) {
    if (count == 0) return;
    check_nccl(nccl().ncclReduce(tensor.data_ptr(), tensor.data_ptr(), count, type, red, root, comm_->comm, s),
               "ncclReduce");
  });
}

std::shared_ptr<Work> ProcessGroupNccl::broadcast(const Tensor& tensor, int root, CallMode /*mode*/) {
  check_tensor(tensor, "broadcast", "tensor");
  check_root(root, "broadcast", "src");
  const auto [type, count] = wire_type(tensor, "broadcast");
  return launch("broadcast", {tensor}, [&](CudaStreamHandle s) {
    if (count == 0) return;
    check_nccl(nccl().ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(), count, type, root, comm_->comm, s),
               "ncclBroadcast");
  });
}

std::shared_ptr<Work> ProcessGroupNccl::all_gather(const Tensor& output, const Tensor& input,
                                                   CallMode /*mode*/) {
  check_tensor(output, "all_gather", "output");
  check_tensor(input, "all_gather", "input");
  KILN_CHECK_VALUE(output.dtype() == input.dtype() && output.numel() == input.numel() * size_,
                   "all_gather: output must hold world_size (", size_, ") inputs of the input's dtype");
  const auto [type, count] = wire_type(input, "all_gather");
  return launch("all_gather", {output, input}, [&](CudaStreamHandle s) {
    if (count == 0) return;
    check_nccl(nccl().ncclAllGather(input.data_ptr(), output.data_ptr(), count, type, comm_->comm, s),
               "ncclAllGather");
  });
}

std::shared_ptr<Work> ProcessGroupNccl::reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op,
                                                       CallMode /*mode*/) {
  check_tensor(output, "reduce_scatter", "output");
  check_tensor(input, "reduce_scatter", "input");
  KILN_CHECK_VALUE(output.dtype() == input.dtype() && input.numel() == output.numel() * size_,
                   "reduce_scatter: input must hold world_size (", size_, ") outputs of the output's dtype");
  const ncclRedOp_t red = nccl_reduce_op(op, output.dtype(), "reduce_scatter");
  const auto [type, count] = wire_type(output, "reduce_scatter");
  return launch("reduce_scatter", {output, input}, [&](CudaStreamHandle s) {
    if (count == 0) return;
    check_nccl(nccl().ncclReduceScatter(input.data_ptr(), output.data_ptr(), count, type, red, comm_->comm, s),
               "ncclReduceScatter");
  });
}

std::shared_ptr<Work> ProcessGroupNccl::gather(const Tensor& output, const Tensor& input, int root,
                                               CallMode /*mode*/) {
  check_tensor(input, "gather", "input");
  check_root(root, "gather", "dst");
  if (rank_ == root) check_tensor(output, "gather", "output");
  const auto [type, count] = wire_type(input, "gather");
  const size_t chunk_bytes = count * wire_bytes(input.dtype());
  return launch("gather", {output, input}, [&](CudaStreamHandle s) {
    if (count == 0) return;
    const NcclApi& api = nccl();
    check_nccl(api.ncclGroupStart(), "ncclGroupStart");
    check_nccl(api.ncclSend(input.data_ptr(), count, type, root, comm_->comm, s), "ncclSend");
    if (rank_ == root) {
      auto* base = static_cast<char*>(output.data_ptr());
      for (int r = 0; r < size_; ++r) {
        check_nccl(api.ncclRecv(base + r * chunk_bytes, count, type, r, comm_->comm, s), "ncclRecv");
      }
    }
    check_nccl(api.ncclGroupEnd(), "ncclGroupEnd");
  });
}

std::shared_ptr<Work> ProcessGroupNccl::scatter(const Tensor& output, const Tensor& input, int root,
                                                CallMode /*mode*/) {
  check_tensor(output, "scatter", "output");
  check_root(root, "scatter", "src");
  if (rank_ == root) check_tensor(input, "scatter", "input");
  const auto [type, count] = wire_type(output, "scatter");
  const size_t chunk_bytes = count * wire_bytes(output.dtype());
  return launch("scatter", {output, input}, [&](CudaStreamHandle s) {
    if (count == 0) return;
    const NcclApi& api = nccl();
    check_nccl(api.ncclGroupStart(), "ncclGroupStart");
    if (rank_ == root) {
      const auto* base = static_cast<const char*>(input.data_ptr());
      for (int r = 0; r < size_; ++r) {
        check_nccl(api.ncclSend(base + r * chunk_bytes, count, type, r, comm_->comm, s), "ncclSend");
      }
    }
    check_nccl(api.ncclRecv(output.data_ptr(), count, type, root, comm_->comm, s), "ncclRecv");
    check_nccl(api.ncclGroupEnd(), "ncclGroupEnd");
  });
}

std::shared_ptr<Work> ProcessGroupNccl::all_to_all(const Tensor& output, const Tensor& input,
                                                   std::vector<int64_t> output_counts,
                                                   std::vector<int64_t> input_counts, CallMode /*mode*/) {
  check_tensor(output, "all_to_all", "output");
  check_tensor(input, "all_to_all", "input");
  KILN_CHECK_VALUE(output_counts.size() == static_cast<size_t>(size_) &&
                       input_counts.size() == static_cast<size_t>(size_),
                   "all_to_all: one count per rank is needed (", size_, ")");
  KILN_CHECK_VALUE(output.dtype() == input.dtype(), "all_to_all: output and input must have one dtype");
  const ncclDataType_t type = wire_type(input, "all_to_all").first;
  const size_t per_element = is_complex(input.dtype()) ? 2 : 1;  // complex travels as two reals
  const size_t element_bytes = static_cast<size_t>(input.itemsize());
  return launch("all_to_all", {output, input}, [&](CudaStreamHandle s) {
    const NcclApi& api = nccl();
    check_nccl(api.ncclGroupStart(), "ncclGroupStart");
    size_t in_offset = 0, out_offset = 0;
    for (int r = 0; r < size_; ++r) {
      const auto n_in = static_cast<size_t>(input_counts[r]);
      const auto n_out = static_cast<size_t>(output_counts[r]);
      if (n_in > 0) {
        check_nccl(api.ncclSend(static_cast<const char*>(input.data_ptr()) + in_offset * element_bytes,
                                n_in * per_element, type, r, comm_->comm, s), "ncclSend");
      }
      if (n_out > 0) {
        check_nccl(api.ncclRecv(static_cast<char*>(output.data_ptr()) + out_offset * element_bytes,
                                n_out * per_element, type, r, comm_->comm, s), "ncclRecv");
      }
      in_offset += n_in;
      out_offset += n_out;
    }
    check_nccl(api.ncclGroupEnd(), "ncclGroupEnd");
  });
}

std::shared_ptr<Work> ProcessGroupNccl::barrier(CallMode /*mode*/) {
  return launch("barrier", {}, [&](CudaStreamHandle s) {
    check_nccl(nccl().ncclAllReduce(barrier_scratch_, barrier_scratch_, 1, kNcclFloat32, kNcclSum, comm_->comm, s),
               "ncclAllReduce (barrier)");
  });
}

std::shared_ptr<Work> ProcessGroupNccl::send(const Tensor& tensor, int dst, uint32_t /*tag*/) {
  check_tensor(tensor, "send", "tensor");
  check_root(dst, "send", "dst");
  KILN_CHECK_VALUE(dst != rank_, "send: a rank cannot send to itself (dst ", dst, ")");
  const auto [type, count] = wire_type(tensor, "send");
  return launch("send", {tensor}, [&](CudaStreamHandle s) {
    if (count == 0) return;
    check_nccl(nccl().ncclSend(tensor.data_ptr(), count, type, dst, comm_->comm, s), "ncclSend");
  });
}

std::shared_ptr<Work> ProcessGroupNccl::recv(const Tensor& tensor, int src, uint32_t /*tag*/) {
  check_tensor(tensor, "recv", "tensor");
  KILN_CHECK_VALUE(src >= 0, "recv: the NCCL backend cannot receive from any source; name the src rank");
  check_root(src, "recv", "src");
  KILN_CHECK_VALUE(src != rank_, "recv: a rank cannot receive from itself (src ", src, ")");
  const auto [type, count] = wire_type(tensor, "recv");
  auto work = launch("recv", {tensor}, [&](CudaStreamHandle s) {
    if (count == 0) return;
    check_nccl(nccl().ncclRecv(tensor.data_ptr(), count, type, src, comm_->comm, s), "ncclRecv");
  });
  std::static_pointer_cast<NcclWork>(work)->set_source_rank(src);
  return work;
}

}  // namespace kiln::distributed
