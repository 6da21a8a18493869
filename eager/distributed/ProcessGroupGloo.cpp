// ProcessGroupGloo: rendezvous through a kiln Store, then Gloo's algorithms on a worker thread.
// See Note [One worker thread per process group].
#include "eager/distributed/ProcessGroupGloo.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>

#include <complex>
#include <cstring>

#include "eager/core/Error.h"
#include "eager/core/Half.h"

namespace kiln::distributed {

namespace {

/// Gloo's rendezvous reads and writes kiln's store through this.
class GlooStore final : public gloo::rendezvous::Store {
 public:
  explicit GlooStore(distributed::Store& store) : store_(store) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(key, Bytes(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const Bytes value = store_.get(key);
    return std::vector<char>(value.begin(), value.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_.wait(keys); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    store_.wait(keys, timeout);
  }

 private:
  distributed::Store& store_;
};

/// Sends and receives use slots no Gloo algorithm uses (Gloo's prefixes are 0x01-0x08).
constexpr uint8_t kPointToPointSlotPrefix = 0x10;

uint64_t point_to_point_slot(uint32_t tag) { return (static_cast<uint64_t>(kPointToPointSlotPrefix) << 56) | tag; }

void check_dense_cpu(const Tensor& t, const char* what, const char* name) {
  KILN_CHECK(t.defined(), what, ": ", name, " is an undefined tensor");
  KILN_CHECK(t.device().is_cpu(), what, ": the Gloo backend takes CPU tensors, got ", name, " on ", t.device().str());
  KILN_CHECK(t.is_contiguous(), what, ": ", name, " must be contiguous");
}

/// An in-place reduction's buffer (Gloo reads and writes the output; no separate input),
/// typed so that Gloo splits it at element boundaries.
template <typename Options>
void set_reduce_buffer(Options& opts, const Tensor& t) {
  switch (t.dtype()) {
#define KILN_GLOO_TYPED_(ctype, name, pyname, legacy, cat)                                   \
  case DType::name:                                                                          \
    opts.setOutput(static_cast<ctype*>(t.data_ptr()), static_cast<size_t>(t.numel()));      \
    return;
    KILN_FORALL_DTYPES_AND_COMPLEX(KILN_GLOO_TYPED_)
#undef KILN_GLOO_TYPED_
  }
}

uint8_t* bytes_of(const Tensor& t) { return static_cast<uint8_t*>(t.data_ptr()); }
size_t nbytes_of(const Tensor& t) { return static_cast<size_t>(t.nbytes()); }

}  // namespace

ProcessGroupGloo::ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size, Milliseconds timeout,
                                   const GlooDeviceAddress& address)
    : rank_(rank), size_(size), timeout_(timeout), store_(std::move(store)) {
  KILN_CHECK_VALUE(size >= 1, "ProcessGroupGloo: world_size must be positive, got ", size);
  KILN_CHECK_VALUE(rank >= 0 && rank < size, "ProcessGroupGloo: rank ", rank, " is out of range for world_size ",
                   size);
  gloo::transport::tcp::attr attr;
  if (!address.interface.empty()) {
    attr.iface = address.interface;
  } else {
    attr.hostname = address.hostname.empty() ? "127.0.0.1" : address.hostname;
  }
  try {
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    GlooStore gloo_store(*store_);
    context->connectFullMesh(gloo_store, device);
    context_ = std::move(context);
  } catch (const kiln::Error& e) {
    KILN_FAIL(Runtime, "ProcessGroupGloo: rendezvous of rank ", rank, " of ", size, " failed: ", e.what());
  } catch (const std::exception& e) {
    KILN_FAIL(Runtime, "ProcessGroupGloo: connecting rank ", rank, " of ", size, " failed: ", e.what());
  }
  worker_ = std::thread([this] { run_worker(); });
}

ProcessGroupGloo::~ProcessGroupGloo() {
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void ProcessGroupGloo::run_worker() {
  while (true) {
    std::pair<std::shared_ptr<QueuedWork>, std::function<void()>> item;
    {
      std::unique_lock<std::mutex> lock(queue_mutex_);
      queue_cv_.wait(lock, [&] { return (stopping_ || !queue_.empty()) && !busy_; });
      if (queue_.empty()) return;  // stopping, and every queued operation ran
      item = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    std::string error;
    try {
      item.second();
    } catch (const std::exception& e) {
      error = failure_message(item.first->what(), e);
    }
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      busy_ = false;
    }
    item.first->finish(std::move(error));
  }
}

std::string ProcessGroupGloo::failure_message(const std::string& what, const std::exception& e) const {
  return what + " failed on rank " + std::to_string(rank_) + ": " + e.what();
}

std::shared_ptr<Work> ProcessGroupGloo::enqueue(const std::string& what, std::vector<Tensor> tensors, Job job,
                                                CallMode mode) {
  uint32_t tag = 0;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    KILN_CHECK(!stopping_, what, ": the process group was destroyed");
    tag = next_tag_++;
    if (mode == CallMode::Async || busy_ || !queue_.empty()) {
      auto work = std::make_shared<QueuedWork>(what, std::move(tensors));
      queue_.emplace_back(work, [job = std::move(job), tag] { job(tag); });
      queue_cv_.notify_one();
      return work;
    }
    busy_ = true;  // Note [Blocking calls on an idle group]: the worker waits until this one ran
  }
  std::string error;
  try {
    job(tag);
  } catch (const std::exception& e) {
    error = failure_message(what, e);
  }
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    busy_ = false;
    // Wake the worker only when it has something to do: work queued meanwhile, or the group is stopping.
    if (!queue_.empty() || stopping_) queue_cv_.notify_one();
  }
  return std::make_shared<CompletedWork>(std::move(error));
}

void ProcessGroupGloo::check_rank(int r, const char* what, const char* role) const {
  KILN_CHECK_VALUE(r >= 0 && r < size_, what, ": ", role, " rank ", r, " is out of range for a group of ", size_,
                   " processes");
}

std::shared_ptr<Work> ProcessGroupGloo::all_reduce(const Tensor& tensor, ReduceOp op, CallMode mode) {
  check_dense_cpu(tensor, "all_reduce", "tensor");
  auto fn = reduce_function(tensor.dtype(), op, "all_reduce");
  return enqueue("all_reduce", {tensor}, [this, tensor, op, fn = std::move(fn)](uint32_t tag) {
    if (tensor.numel() == 0) return;
    gloo::AllreduceOptions opts(context_);
    set_reduce_buffer(opts, tensor);
    opts.setReduceFunction(fn);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    gloo::allreduce(opts);
    if (op == ReduceOp::Avg) divide_in_place(tensor.data_ptr(), tensor.dtype(), tensor.numel(), size_);
  }, mode);
}

std::shared_ptr<Work> ProcessGroupGloo::reduce(const Tensor& tensor, ReduceOp op, int root, CallMode mode) {
  check_dense_cpu(tensor, "reduce", "tensor");
  check_rank(root, "reduce", "root");
  auto fn = reduce_function(tensor.dtype(), op, "reduce");
  return enqueue("reduce", {tensor}, [this, tensor, op, root, fn = std::move(fn)](uint32_t tag) {
    if (tensor.numel() == 0) return;
    gloo::ReduceOptions opts(context_);
    set_reduce_buffer(opts, tensor);
    opts.setReduceFunction(fn);
    opts.setRoot(root);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    gloo::reduce(opts);
    if (op == ReduceOp::Avg && rank_ == root) divide_in_place(tensor.data_ptr(), tensor.dtype(), tensor.numel(), size_);
  }, mode);
}

std::shared_ptr<Work> ProcessGroupGloo::broadcast(const Tensor& tensor, int root, CallMode mode) {
  check_dense_cpu(tensor, "broadcast", "tensor");
  check_rank(root, "broadcast", "root");
  return enqueue("broadcast", {tensor}, [this, tensor, root](uint32_t tag) {
    if (tensor.numel() == 0) return;
    gloo::BroadcastOptions opts(context_);
    if (rank_ == root) opts.setInput(bytes_of(tensor), nbytes_of(tensor));
    opts.setOutput(bytes_of(tensor), nbytes_of(tensor));
    opts.setRoot(root);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    gloo::broadcast(opts);
  }, mode);
}

std::shared_ptr<Work> ProcessGroupGloo::all_gather(const Tensor& output, const Tensor& input, CallMode mode) {
  check_dense_cpu(output, "all_gather", "output");
  check_dense_cpu(input, "all_gather", "input");
  KILN_CHECK(output.dtype() == input.dtype(), "all_gather: output is ", dtype_name(output.dtype()), " but input is ",
             dtype_name(input.dtype()));
  KILN_CHECK(output.numel() == input.numel() * size_, "all_gather: output has ", output.numel(),
             " elements; it needs world_size (", size_, ") times input's ", input.numel());
  return enqueue("all_gather", {output, input}, [this, output, input](uint32_t tag) {
    if (input.numel() == 0) return;
    gloo::AllgatherOptions opts(context_);
    opts.setInput(bytes_of(input), nbytes_of(input));
    opts.setOutput(bytes_of(output), nbytes_of(output));
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    gloo::allgather(opts);
  }, mode);
}

std::shared_ptr<Work> ProcessGroupGloo::gather(const Tensor& output, const Tensor& input, int root, CallMode mode) {
  check_dense_cpu(input, "gather", "input");
  check_rank(root, "gather", "root");
  if (rank_ == root) {
    check_dense_cpu(output, "gather", "output");
    KILN_CHECK(output.dtype() == input.dtype() && output.numel() == input.numel() * size_,
               "gather: the root's output must hold world_size (", size_, ") tensors like input");
  }
  return enqueue("gather", {output, input}, [this, output, input, root](uint32_t tag) {
    if (input.numel() == 0) return;
    gloo::GatherOptions opts(context_);
    opts.setInput(bytes_of(input), nbytes_of(input));
    if (rank_ == root) opts.setOutput(bytes_of(output), nbytes_of(output));
    opts.setRoot(root);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    gloo::gather(opts);
  }, mode);
}

std::shared_ptr<Work> ProcessGroupGloo::scatter(const Tensor& output, const Tensor& input, int root, CallMode mode) {
  check_dense_cpu(output, "scatter", "output");
  check_rank(root, "scatter", "root");
  if (rank_ == root) {
    check_dense_cpu(input, "scatter", "input");
    KILN_CHECK(output.dtype() == input.dtype() && input.numel() == output.numel() * size_,
               "scatter: the root's input must hold world_size (", size_, ") tensors like output");
  }
  return enqueue("scatter", {output, input}, [this, output, input, root](uint32_t tag) {
    if (output.numel() == 0) return;
    gloo::ScatterOptions opts(context_);
    if (rank_ == root) {
      std::vector<uint8_t*> chunks;
      for (int r = 0; r < size_; ++r) chunks.push_back(bytes_of(input) + static_cast<size_t>(r) * nbytes_of(output));
      opts.setInputs(chunks, nbytes_of(output));
    }
    opts.setOutput(bytes_of(output), nbytes_of(output));
    opts.setRoot(root);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    gloo::scatter(opts);
  }, mode);
}

std::shared_ptr<Work> ProcessGroupGloo::reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op,
                                                       CallMode mode) {
  check_dense_cpu(output, "reduce_scatter", "output");
  check_dense_cpu(input, "reduce_scatter", "input");
  KILN_CHECK(output.dtype() == input.dtype() && input.numel() == output.numel() * size_,
             "reduce_scatter: input must hold world_size (", size_, ") tensors like output (", output.numel(),
             " elements each), got ", input.numel(), " elements");
  auto fn = reduce_function(input.dtype(), op, "reduce_scatter");
  // Gloo's all-reduce over the whole input, then this rank's chunk: Gloo 2022 has
  // no reduce-scatter collective with the Options API (torch's Gloo backend does the same).
  return enqueue("reduce_scatter", {output, input}, [this, output, input, op, fn = std::move(fn)](uint32_t tag) {
    if (output.numel() == 0) return;
    gloo::AllreduceOptions opts(context_);
    set_reduce_buffer(opts, input);
    opts.setReduceFunction(fn);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    gloo::allreduce(opts);
    std::memcpy(output.data_ptr(), bytes_of(input) + static_cast<size_t>(rank_) * nbytes_of(output),
                nbytes_of(output));
    if (op == ReduceOp::Avg) divide_in_place(output.data_ptr(), output.dtype(), output.numel(), size_);
  }, mode);
}

std::shared_ptr<Work> ProcessGroupGloo::all_to_all(const Tensor& output, const Tensor& input,
                                                   std::vector<int64_t> output_counts,
                                                   std::vector<int64_t> input_counts, CallMode mode) {
  check_dense_cpu(output, "all_to_all", "output");
  check_dense_cpu(input, "all_to_all", "input");
  KILN_CHECK(output.dtype() == input.dtype(), "all_to_all: output is ", dtype_name(output.dtype()),
             " but input is ", dtype_name(input.dtype()));
  const auto check_counts = [&](const std::vector<int64_t>& counts, const Tensor& t, const char* name) {
    KILN_CHECK_VALUE(static_cast<int>(counts.size()) == size_, "all_to_all: ", name, " split sizes must have "
                     "world_size (", size_, ") entries, got ", counts.size());
    int64_t total = 0;
    for (int64_t c : counts) {
      KILN_CHECK_VALUE(c >= 0, "all_to_all: ", name, " split sizes must not be negative, got ", c);
      total += c;
    }
    KILN_CHECK_VALUE(total == t.numel(), "all_to_all: ", name, " split sizes add up to ", total,
                     " elements but the ", name, " tensor has ", t.numel());
  };
  check_counts(output_counts, output, "output");
  check_counts(input_counts, input, "input");
  KILN_CHECK_VALUE(output_counts[rank_] == input_counts[rank_], "all_to_all: rank ", rank_, " sends itself ",
                   input_counts[rank_], " elements but expects ", output_counts[rank_]);
  return enqueue("all_to_all", {output, input},
                 [this, output, input, out_counts = std::move(output_counts),
                  in_counts = std::move(input_counts)](uint32_t tag) {
    // Every rank takes part, even one that sends and receives nothing: its peers'
    // zero-length messages must be matched. Gloo wants a buffer, so an empty
    // tensor lends it a byte of scratch (Gloo reads and writes none of it).
    uint8_t scratch_in = 0, scratch_out = 0;
    gloo::AlltoallvOptions opts(context_);
    const int64_t element = input.itemsize();
    std::vector<int64_t> in_bytes, out_bytes;
    for (int64_t c : in_counts) in_bytes.push_back(c * element);
    for (int64_t c : out_counts) out_bytes.push_back(c * element);
    // Byte counts, elements of one byte: Gloo splits nothing inside a chunk.
    opts.setInput(input.numel() ? bytes_of(input) : &scratch_in, in_bytes);
    opts.setOutput(output.numel() ? bytes_of(output) : &scratch_out, out_bytes);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    gloo::alltoallv(opts);
  }, mode);
}

std::shared_ptr<Work> ProcessGroupGloo::barrier(CallMode mode) {
  return enqueue("barrier", {}, [this](uint32_t tag) {
    gloo::BarrierOptions opts(context_);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    gloo::barrier(opts);
  }, mode);
}

std::shared_ptr<Work> ProcessGroupGloo::send(const Tensor& tensor, int dst, uint32_t tag) {
  check_dense_cpu(tensor, "send", "tensor");
  check_rank(dst, "send", "destination");
  KILN_CHECK_VALUE(dst != rank_, "send: a rank cannot send to itself (rank ", rank_, ")");
  std::shared_ptr<gloo::transport::UnboundBuffer> buffer =
      context_->createUnboundBuffer(tensor.data_ptr(), nbytes_of(tensor));
  buffer->send(dst, point_to_point_slot(tag));
  const Milliseconds timeout = timeout_;
  return std::make_shared<PointToPointWork>("send to rank " + std::to_string(dst), tensor, buffer, [buffer, timeout] {
    int peer = -1;
    KILN_CHECK(buffer->waitSend(&peer, timeout), "the send was aborted");
    return peer;
  });
}

std::shared_ptr<Work> ProcessGroupGloo::recv(const Tensor& tensor, int src, uint32_t tag) {
  check_dense_cpu(tensor, "recv", "tensor");
  if (src >= 0) check_rank(src, "recv", "source");
  KILN_CHECK_VALUE(src != rank_, "recv: a rank cannot receive from itself (rank ", rank_, ")");
  std::shared_ptr<gloo::transport::UnboundBuffer> buffer =
      context_->createUnboundBuffer(tensor.data_ptr(), nbytes_of(tensor));
  if (src >= 0) {
    buffer->recv(src, point_to_point_slot(tag));
  } else {
    std::vector<int> everyone;
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) everyone.push_back(r);
    }
    buffer->recv(everyone, point_to_point_slot(tag));
  }
  const Milliseconds timeout = timeout_;
  const std::string what = src >= 0 ? "recv from rank " + std::to_string(src) : std::string("recv from any rank");
  return std::make_shared<PointToPointWork>(what, tensor, buffer, [buffer, timeout] {
    int peer = -1;
    KILN_CHECK(buffer->waitRecv(&peer, timeout), "the receive was aborted");
    return peer;
  });
}

}  // namespace kiln::distributed
