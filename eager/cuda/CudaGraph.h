// CUDA graphs: a sequence of kernel launches captured from a stream once and
// replayed with one cuGraphLaunch (the driver's stream capture). Used by
// mode="reduce-overhead" on CUDA (runtime/CompiledGraph.h, Note [CUDA graphs of
// a compiled graph]).
#pragma once

#include <functional>
#include <memory>

#include "eager/cuda/CudaStream.h"
#include "eager/cuda/DriverApi.h"

namespace kiln::cuda {

/// True when the driver has stream capture and graph launch (cuStreamBeginCapture_v2,
/// cuStreamEndCapture, cuGraphInstantiateWithFlags, cuGraphLaunch and the destroys); never throws.
[[nodiscard]] bool graphs_available();

/// One instantiated graph. Move-only; destroys the graph and its executable.
class CudaGraph {
 public:
  /// Captures what `launches` queues on `stream` (thread-local capture mode: nothing runs while
  /// it captures; the launches must only queue work on `stream`). nullptr when the driver has no
  /// graphs, `stream` is the legacy default stream (it cannot be captured), or capture or
  /// instantiation fails: the caller then launches plainly. An exception from `launches` ends
  /// the capture and propagates.
  [[nodiscard]] static std::unique_ptr<CudaGraph> capture(const Stream& stream, const std::function<void()>& launches);

  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  ~CudaGraph();

  /// Queues the captured launches on `stream`.
  void replay(const Stream& stream) const;

 private:
  CudaGraph(CUgraph graph, CUgraphExec exec) : graph_(graph), exec_(exec) {}
  CUgraph graph_;
  CUgraphExec exec_;
};

/// Process-wide counts, for tests: graphs captured, replays launched.
struct CudaGraphCounts {
  int64_t captured = 0;
  int64_t replayed = 0;
};
[[nodiscard]] CudaGraphCounts cuda_graph_counts();

}  // namespace kiln::cuda
