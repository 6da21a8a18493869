// mode="reduce-overhead" on CUDA: a compiled graph's kernel launches replayed as
// one CUDA graph when a run repeats launches captured before. See Note [CUDA
// graphs of a compiled graph].
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "codegen/FusionKernel.h"
#include "eager/cuda/CudaGraph.h"
#include "runtime/CudaKernelRun.h"

namespace kiln::runtime {

// Note [CUDA graphs of a compiled graph]
// --------------------------------------
// With mode="reduce-overhead" a CUDA compiled graph's kernel intermediates live
// in one device arena (Note [The memory plan]: one caching-allocator block,
// allocated by the first run and kept, offsets from the plan), so their
// addresses are the same on every run. When every step is a pointwise kernel
// step, a run binds all steps first (outputs placed: the arena, an input the
// output is stored into, or an allocation for what the caller gets back) and
// then launches them. The launches are fully described by a key: each kernel,
// its data pointers, element count, sizes and strides (a kernel's other values
// are constants of its source). The second run with a key captures the
// launches (the driver's stream capture, thread-local mode; the first run
// compiled every kernel, so capture queues launches only) and every later run
// with that key replays the graph with one cuGraphLaunch on the current
// stream. Graph outputs are fresh allocations each run (the caller may keep
// them), so the key repeats when the caching allocator hands the same blocks
// back, as a loop that drops the previous result does (alternating results
// give two keys; a graph keeps at most kMaxCudaGraphs of them and forgets all
// when more come). Results never depend on the path: a replay queues exactly
// the launches the key describes, in step order, on one stream. Without the
// driver's graph entry points, on a capture the driver refuses, or when a step
// is not what its kernel was built for, the launches are plain. The legacy
// default stream cannot be captured: capture then goes to a side stream of
// the device (nothing runs while capturing) and the replay to the current one.
// Left for a GPU run: the replay's speed, and row kernels (their outputs are
// not in the arena yet, so graphs with row kernels launch plainly).
inline constexpr size_t kMaxCudaGraphs = 8;

/// One kernel launch of a run, as launch_cuda_pointwise takes it.
struct CudaLaunch {
  const CudaKernel* cuda = nullptr;
  const codegen::Kernel* kernel = nullptr;
  int device = -1;
  std::vector<void*> data;
  int64_t numel = 0;
  std::vector<int64_t> sizes, strides;
};

/// Per compiled graph: the keys seen and the graphs captured for them. Thread-safe.
class CudaGraphReplays {
 public:
  /// Queues `launches` (one device) on the current stream: a replay of the graph captured for them, a
  /// capture (the second time they are seen) followed by its replay, or plain launches.
  void run(const std::vector<CudaLaunch>& launches);
  /// Plain launches, in order.
  static void launch_plainly(const std::vector<CudaLaunch>& launches);

  [[nodiscard]] int64_t captures() const { return captures_; }
  [[nodiscard]] int64_t replays() const { return replays_; }

 private:
  struct Entry {
    bool uncapturable = false;  // the driver refused: launch plainly
    std::unique_ptr<cuda::CudaGraph> graph;
  };
  std::mutex mu_;
  std::map<std::vector<uint64_t>, Entry> entries_;
  std::map<int, cuda::Stream> capture_streams_;  // per device, for a capture from the legacy default stream
  int64_t captures_ = 0, replays_ = 0;
};

}  // namespace kiln::runtime
