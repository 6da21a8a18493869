// The TBB-backed pool behind parallel_for.
#include "eager/kernels/Parallel.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include "eager/core/Error.h"

namespace kiln {

namespace {

int default_num_threads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

std::atomic<int> g_num_threads{default_num_threads()};
std::mutex g_arena_mutex;
std::shared_ptr<tbb::task_arena> g_arena;  // rebuilt when the thread count changes
thread_local int t_parallel_depth = 0;

std::shared_ptr<tbb::task_arena> current_arena() {
  std::lock_guard<std::mutex> lock(g_arena_mutex);
  const int n = g_num_threads.load();
  if (!g_arena || g_arena->max_concurrency() != n) g_arena = std::make_shared<tbb::task_arena>(n);
  return g_arena;
}

/// Marks the running thread as inside a parallel_for body for its lifetime,
/// also when the body throws (nested calls then run inline).
struct InParallelRegion {
  InParallelRegion() { ++t_parallel_depth; }
  ~InParallelRegion() { --t_parallel_depth; }
  InParallelRegion(const InParallelRegion&) = delete;
  InParallelRegion& operator=(const InParallelRegion&) = delete;
};

}  // namespace

int get_num_threads() { return g_num_threads.load(std::memory_order_relaxed); }

void set_num_threads(int n) {
  KILN_CHECK(n > 0, "set_num_threads expects a positive integer, got ", n);
  g_num_threads.store(n);
}

bool in_parallel_region() { return t_parallel_depth > 0; }

namespace detail {

void parallel_for_impl(int64_t begin, int64_t end, int64_t grain_size,
                       const std::function<void(int64_t, int64_t)>& f) {
  const auto arena = current_arena();
  arena->execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(begin, end, grain_size),
        [&](const tbb::blocked_range<int64_t>& r) {
          const InParallelRegion region;
          f(r.begin(), r.end());
        },
        tbb::static_partitioner());
  });
}

void parallel_for_each_impl(int64_t begin, int64_t end, const std::function<void(int64_t)>& f) {
  const auto arena = current_arena();
  arena->execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(begin, end, 1),
        [&](const tbb::blocked_range<int64_t>& r) {
          const InParallelRegion region;
          for (int64_t i = r.begin(); i < r.end(); ++i) f(i);
        },
        tbb::simple_partitioner());
  });
}

}  // namespace detail
}  // namespace kiln
