// CUDA-graph replay of a compiled graph's launches (CudaGraphReplay.h, Note [CUDA graphs of a compiled graph]).
#include "runtime/CudaGraphReplay.h"

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"

namespace kiln::runtime {

namespace {

/// What the launches do, as words: per launch its kernel, device, pointers, element count, sizes and strides.
std::vector<uint64_t> key_of(const std::vector<CudaLaunch>& launches) {
  std::vector<uint64_t> key;
  for (const CudaLaunch& l : launches) {
    key.push_back(reinterpret_cast<uint64_t>(l.cuda));
    key.push_back(static_cast<uint64_t>(l.device));
    key.push_back(l.data.size());
    for (void* p : l.data) key.push_back(reinterpret_cast<uint64_t>(p));
    key.push_back(static_cast<uint64_t>(l.numel));
    key.push_back(l.sizes.size());
    for (int64_t s : l.sizes) key.push_back(static_cast<uint64_t>(s));
    for (int64_t s : l.strides) key.push_back(static_cast<uint64_t>(s));
  }
  return key;
}

/// Restores the calling thread's current stream of a device on scope exit.
class CurrentStreamGuard {
 public:
  explicit CurrentStreamGuard(int device) : saved_(cuda::current_stream(device)) {}
  ~CurrentStreamGuard() { cuda::set_current_stream(saved_); }
  CurrentStreamGuard(const CurrentStreamGuard&) = delete;
  CurrentStreamGuard& operator=(const CurrentStreamGuard&) = delete;

 private:
  cuda::Stream saved_;
};

}  // namespace

void CudaGraphReplays::launch_plainly(const std::vector<CudaLaunch>& launches) {
  for (const CudaLaunch& l : launches) {
    launch_cuda_pointwise(*l.cuda, *l.kernel, l.device, l.data, l.numel, l.sizes, l.strides);
  }
}

void CudaGraphReplays::run(const std::vector<CudaLaunch>& launches) {
  if (launches.empty()) return;
  const int device = launches.front().device;
  if (!cuda::graphs_available()) {
    launch_plainly(launches);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> key = key_of(launches);
  auto found = entries_.find(key);
  if (found == entries_.end()) {  // first sighting: plain launches (they also compile every kernel)
    if (entries_.size() >= kMaxCudaGraphs) entries_.clear();
    entries_.emplace(std::move(key), Entry{});
    launch_plainly(launches);
    return;
  }
  Entry& entry = found->second;
  const cuda::Stream current = cuda::current_stream(device);
  if (!entry.graph && !entry.uncapturable) {
    cuda::DeviceGuard guard(device);
    cuda::Stream target = current;
    if (current.handle() == nullptr) {  // the legacy default stream cannot be captured
      auto side = capture_streams_.find(device);
      if (side == capture_streams_.end()) side = capture_streams_.emplace(device, cuda::Stream::create(device)).first;
      target = side->second;
    }
    {
      CurrentStreamGuard restore(device);
      cuda::set_current_stream(target);
      entry.graph = cuda::CudaGraph::capture(target, [&] { launch_plainly(launches); });
    }
    if (!entry.graph) {  // refused: nothing ran under the capture; launch as usual from now on
      entry.uncapturable = true;
      launch_plainly(launches);
      return;
    }
    ++captures_;
  }
  if (entry.uncapturable) {
    launch_plainly(launches);
    return;
  }
  cuda::DeviceGuard guard(device);
  entry.graph->replay(current);
  ++replays_;
}

}  // namespace kiln::runtime
