// CUDA graphs through the driver's stream capture (CudaGraph.h).
#include "eager/cuda/CudaGraph.h"

#include <atomic>

#include "eager/core/Error.h"

namespace kiln::cuda {

namespace {

std::atomic<int64_t> captured_count{0};
std::atomic<int64_t> replayed_count{0};

}  // namespace

bool graphs_available() {
  if (!driver_available()) return false;
  const DriverApi& a = driver();
  return a.cuStreamBeginCapture != nullptr && a.cuStreamEndCapture != nullptr &&
         a.cuGraphInstantiateWithFlags != nullptr && a.cuGraphLaunch != nullptr && a.cuGraphExecDestroy != nullptr &&
         a.cuGraphDestroy != nullptr;
}

std::unique_ptr<CudaGraph> CudaGraph::capture(const Stream& stream, const std::function<void()>& launches) {
  if (!graphs_available() || stream.handle() == nullptr) return nullptr;
  const DriverApi& a = driver();
  if (a.cuStreamBeginCapture(stream.handle(), kStreamCaptureModeThreadLocal) != kCudaSuccess) return nullptr;
  CUgraph graph = nullptr;
  try {
    launches();
  } catch (...) {
    a.cuStreamEndCapture(stream.handle(), &graph);  // leaves the stream usable again
    if (graph != nullptr) a.cuGraphDestroy(graph);
    throw;
  }
  if (a.cuStreamEndCapture(stream.handle(), &graph) != kCudaSuccess || graph == nullptr) return nullptr;
  CUgraphExec exec = nullptr;
  if (a.cuGraphInstantiateWithFlags(&exec, graph, 0) != kCudaSuccess || exec == nullptr) {
    a.cuGraphDestroy(graph);
    return nullptr;
  }
  ++captured_count;
  return std::unique_ptr<CudaGraph>(new CudaGraph(graph, exec));
}

CudaGraph::~CudaGraph() {
  const DriverApi& a = driver();
  a.cuGraphExecDestroy(exec_);
  a.cuGraphDestroy(graph_);
}

void CudaGraph::replay(const Stream& stream) const {
  check(driver().cuGraphLaunch(exec_, stream.handle()), "cuGraphLaunch");
  ++replayed_count;
}

CudaGraphCounts cuda_graph_counts() { return {captured_count.load(), replayed_count.load()}; }

}  // namespace kiln::cuda
