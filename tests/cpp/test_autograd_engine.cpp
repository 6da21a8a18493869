// The engine's ready queue per device (Note [A ready queue per device],
// eager/autograd/Engine.h): which thread runs each node, order and
// dependencies, errors from a worker, reentrant backward from a worker.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "eager/autograd/DeviceWorkers.h"
#include "eager/autograd/Engine.h"
#include "eager/autograd/Node.h"
#include "eager/autograd/Variable.h"
#include "eager/core/Error.h"
#include "eager/kernels/cpu/creation/Factories.h"

using namespace kiln;
using namespace kiln::autograd;

namespace {

const Device kCuda0(DeviceType::CUDA, 0);
const Device kCuda1(DeviceType::CUDA, 1);

struct NodeRun {
  std::string name;
  std::thread::id thread;
  float input;
};

struct Log {
  std::mutex mutex;
  std::vector<NodeRun> runs;
  void add(NodeRun r) {
    std::lock_guard<std::mutex> lock(mutex);
    runs.push_back(std::move(r));
  }
  [[nodiscard]] const NodeRun& of(const std::string& name) const {
    for (const NodeRun& r : runs) {
      if (r.name == name) return r;
    }
    throw std::runtime_error("node " + name + " did not run");
  }
  [[nodiscard]] size_t position(const std::string& name) const {
    for (size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].name == name) return i;
    }
    throw std::runtime_error("node " + name + " did not run");
  }
};

/// Records who ran it and passes its (summed) input gradient to every edge;
/// `body` runs inside apply (to throw, sleep or call backward again).
class Probe final : public Node {
 public:
  Probe(std::string name, Device device, Log& log, std::function<void()> body = {})
      : name_(std::move(name)), log_(log), body_(std::move(body)) {
    (void)add_input_metadata(InputMetadata{DimVector{1}, DType::Float32, device});
  }
  variable_list apply(variable_list&& grads) override {
    log_.add(NodeRun{name_, std::this_thread::get_id(), grads[0].data_ptr<float>()[0]});
    if (body_) body_();
    return variable_list(num_outputs(), grads[0]);
  }
  [[nodiscard]] std::string name() const override { return name_; }

 private:
  std::string name_;
  Log& log_;
  std::function<void()> body_;
};

std::shared_ptr<Probe> probe(const std::string& name, Device device, Log& log, std::vector<std::shared_ptr<Node>> next,
                             std::function<void()> body = {}) {
  auto p = std::make_shared<Probe>(name, device, log, std::move(body));
  for (auto& n : next) p->add_next_edge(Edge{n, 0});
  return p;
}

Tensor one() { return full({1}, Scalar(1.0), DType::Float32); }

void backward(const std::vector<std::shared_ptr<Node>>& roots) {
  std::vector<Edge> edges;
  variable_list grads;
  for (const auto& r : roots) {
    edges.push_back(Edge{r, 0});
    grads.push_back(one());
  }
  (void)Engine::execute(edges, grads, /*keep_graph=*/false, /*create_graph=*/false, {}, /*accumulate_grad=*/true);
}

TEST(AutogradEngine, DeviceNodesRunOnTheDeviceWorkerAndCpuNodesOnTheCaller) {
  Log log;
  // A diamond across devices: both paths meet in `join` (cuda:0), whose input
  // is the sum of both; `sink` (CPU) runs after it.
  auto sink = probe("sink", Device(), log, {});
  auto join = probe("join", kCuda0, log, {sink});
  auto on_gpu = probe("on_gpu", kCuda0, log, {join});
  auto on_cpu = probe("on_cpu", Device(), log, {join});
  auto on_gpu1 = probe("on_gpu1", kCuda1, log, {sink});
  auto top = probe("top", Device(), log, {on_gpu, on_cpu, on_gpu1});
  backward({top});

  const std::thread::id caller = std::this_thread::get_id();
  const std::thread::id worker0 = device_worker_thread_id(kCuda0);
  const std::thread::id worker1 = device_worker_thread_id(kCuda1);
  EXPECT_NE(worker0, caller);
  EXPECT_NE(worker1, caller);
  EXPECT_NE(worker0, worker1);
  ASSERT_EQ(log.runs.size(), 6u);
  EXPECT_EQ(log.of("top").thread, caller);
  EXPECT_EQ(log.of("on_cpu").thread, caller);
  EXPECT_EQ(log.of("sink").thread, caller);
  EXPECT_EQ(log.of("on_gpu").thread, worker0);
  EXPECT_EQ(log.of("join").thread, worker0);
  EXPECT_EQ(log.of("on_gpu1").thread, worker1);
  // Dependencies: a node runs after every node feeding it, with their sum.
  EXPECT_LT(log.position("on_gpu"), log.position("join"));
  EXPECT_LT(log.position("on_cpu"), log.position("join"));
  EXPECT_LT(log.position("join"), log.position("sink"));
  EXPECT_LT(log.position("on_gpu1"), log.position("sink"));
  EXPECT_EQ(log.of("join").input, 2.0f);
  EXPECT_EQ(log.of("sink").input, 3.0f);
}

TEST(AutogradEngine, AWorkerRunsItsReadyNodesNewestFirst) {
  Log log;
  auto p1 = probe("p1", kCuda0, log, {});
  auto p2 = probe("p2", kCuda0, log, {});
  auto p3 = probe("p3", kCuda0, log, {});
  // `gate` is newest, so the worker takes it first; while it sleeps the
  // others queue behind it and must come out by sequence number.
  auto gate = probe("gate", kCuda0, log, {}, [] { std::this_thread::sleep_for(std::chrono::milliseconds(100)); });
  auto top = probe("top", Device(), log, {gate, p1, p2, p3});
  backward({top});
  ASSERT_EQ(log.runs.size(), 5u);
  EXPECT_EQ(log.runs[1].name, "gate");
  EXPECT_EQ(log.runs[2].name, "p3");
  EXPECT_EQ(log.runs[3].name, "p2");
  EXPECT_EQ(log.runs[4].name, "p1");
}

TEST(AutogradEngine, AnErrorOnAWorkerReachesTheCallerWithTheNodeName) {
  Log log;
  auto after = probe("after", Device(), log, {});
  auto thrower = probe("Thrower", kCuda0, log, {after}, [] { KILN_FAIL(Runtime, "boom on the device"); });
  auto top = probe("top", Device(), log, {thrower});
  try {
    backward({top});
    FAIL() << "backward did not raise";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("boom on the device"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(raised while computing the gradient in Thrower)"), std::string::npos) << msg;
  }
  EXPECT_THROW((void)log.of("after"), std::runtime_error);  // nothing downstream of the failure ran
  // The engine is usable afterwards.
  Log again;
  backward({probe("fine", kCuda0, again, {})});
  EXPECT_EQ(again.runs.size(), 1u);
}

TEST(AutogradEngine, ReentrantBackwardFromAWorker) {
  Log log;
  Log inner;
  std::thread::id inner_caller;
  auto outer_sink = probe("outer_sink", Device(), log, {});
  auto reenter = probe("reenter", kCuda0, log, {outer_sink}, [&] {
    inner_caller = std::this_thread::get_id();
    // A backward inside a backward, from the cuda:0 worker: its cuda:0 and
    // CPU nodes run on this thread, its cuda:1 node on that worker.
    auto leaf = probe("inner_leaf", Device(), inner, {});
    auto g0 = probe("inner_gpu0", kCuda0, inner, {leaf});
    auto g1 = probe("inner_gpu1", kCuda1, inner, {leaf});
    backward({probe("inner_top", kCuda0, inner, {g0, g1})});
  });
  backward({probe("top", Device(), log, {reenter})});
  const std::thread::id worker0 = device_worker_thread_id(kCuda0);
  EXPECT_EQ(inner_caller, worker0);
  ASSERT_EQ(inner.runs.size(), 4u);
  EXPECT_EQ(inner.of("inner_top").thread, worker0);
  EXPECT_EQ(inner.of("inner_gpu0").thread, worker0);
  EXPECT_EQ(inner.of("inner_leaf").thread, worker0);
  EXPECT_EQ(inner.of("inner_gpu1").thread, device_worker_thread_id(kCuda1));
  EXPECT_EQ(inner.of("inner_leaf").input, 2.0f);
  EXPECT_EQ(log.of("outer_sink").thread, std::this_thread::get_id());
  EXPECT_LT(log.position("reenter"), log.position("outer_sink"));
}

TEST(AutogradEngine, CallbacksQueuedOnAWorkerRunAfterBackward) {
  Log log;
  std::vector<std::string> order;
  std::mutex mutex;
  auto sink = probe("sink", Device(), log, {}, [&] {
    std::lock_guard<std::mutex> lock(mutex);
    order.push_back("sink");
  });
  auto gpu = probe("gpu", kCuda0, log, {sink}, [&] {
    Engine::queue_callback([&] { order.push_back("callback"); });
  });
  backward({probe("top", Device(), log, {gpu})});
  EXPECT_EQ(order, (std::vector<std::string>{"sink", "callback"}));
}

TEST(AutogradEngine, CpuOnlyGraphsRunOnTheCaller) {
  Log log;
  auto c = probe("c", Device(), log, {});
  backward({probe("a", Device(), log, {c}), probe("b", Device(), log, {c})});
  ASSERT_EQ(log.runs.size(), 3u);
  for (const NodeRun& r : log.runs) EXPECT_EQ(r.thread, std::this_thread::get_id());
  EXPECT_EQ(log.of("c").input, 2.0f);
}

}  // namespace
