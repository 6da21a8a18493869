// kiln's thread pool (eager/kernels/Parallel.h): parallel_for covers its range
// once in chunks, parallel_for_each runs every index once as its own task,
// both run nested calls inline, carry a body's exception to the caller, and
// honour set_num_threads.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "eager/kernels/Parallel.h"

using namespace kiln;

namespace {

class ThreadCount : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    previous_ = get_num_threads();
    set_num_threads(GetParam());
  }
  void TearDown() override { set_num_threads(previous_); }

 private:
  int previous_ = 1;
};

TEST_P(ThreadCount, ParallelForEachRunsEveryIndexOnce) {
  for (const int64_t n : {1, 2, 3, 7, 64}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    parallel_for_each(0, n, [&](int64_t i) {
      EXPECT_TRUE(n == 1 || GetParam() == 1 || in_parallel_region());
      hits[static_cast<size_t>(i)].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST_P(ThreadCount, ParallelForEachOfAnEmptyRangeRunsNothing) {
  int calls = 0;
  parallel_for_each(5, 5, [&](int64_t) { ++calls; });
  parallel_for_each(5, 2, [&](int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST_P(ThreadCount, ParallelForCoversTheRangeOnce) {
  const int64_t n = 100000;
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  parallel_for(0, n, 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
}

TEST_P(ThreadCount, NestedCallsRunInline) {
  std::atomic<int> inner{0};
  parallel_for_each(0, 4, [&](int64_t) {
    parallel_for_each(0, 3, [&](int64_t) { inner.fetch_add(1); });
    parallel_for(0, 100000, 10, [&](int64_t b, int64_t e) {
      EXPECT_EQ(b, 0);  // one inline chunk: the whole range
      EXPECT_EQ(e, 100000);
    });
  });
  EXPECT_EQ(inner.load(), 12);
  EXPECT_FALSE(in_parallel_region());
}

TEST_P(ThreadCount, AnExceptionReachesTheCallerAndThePoolStaysUsable) {
  EXPECT_THROW(parallel_for_each(0, 8, [](int64_t i) {
                 if (i == 5) throw std::runtime_error("piece 5 failed");
               }),
               std::runtime_error);
  EXPECT_FALSE(in_parallel_region());
  std::atomic<int> after{0};
  parallel_for_each(0, 8, [&](int64_t) { after.fetch_add(1); });
  EXPECT_EQ(after.load(), 8);
}

INSTANTIATE_TEST_SUITE_P(Threads, ThreadCount, ::testing::Values(1, 2, 4));

TEST(SetNumThreads, RejectsZero) { EXPECT_ANY_THROW(set_num_threads(0)); }

}  // namespace
