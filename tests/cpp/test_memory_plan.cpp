// The memory plan (runtime/MemoryPlan.h) on hand-made step lists: release
// lists, in-place choices (never a graph input's or output's storage, never a
// storage read later), arena ranges disjoint exactly where lifetimes overlap.
#include <gtest/gtest.h>

#include "runtime/MemoryPlan.h"

using namespace kiln::runtime;

namespace {

PlanStep kernel_step(std::vector<size_t> reads, size_t write, int64_t bytes, std::vector<size_t> same_layout) {
  PlanStep s;
  s.kernel = true;
  s.reads = std::move(reads);
  s.writes = {write};
  s.write_bytes = {bytes};
  s.same_layout_reads = {std::move(same_layout)};
  return s;
}

PlanStep eager_step(std::vector<size_t> reads, size_t write) {
  PlanStep s;
  s.reads = std::move(reads);
  s.writes = {write};
  return s;
}

/// Every slot its own storage class; slot 0 the graph input, `output` the graph output.
MemoryPlanInput chain_input(std::vector<PlanStep> steps, size_t num_slots, size_t output, bool arena) {
  MemoryPlanInput in;
  in.steps = std::move(steps);
  in.num_slots = num_slots;
  in.graph_inputs = {0};
  in.graph_outputs = {output};
  in.arena = arena;
  for (size_t s = 0; s < num_slots; ++s) in.storage_class.push_back(s);
  in.class_written.assign(num_slots, false);
  in.class_has_input.assign(num_slots, false);
  in.class_has_output.assign(num_slots, false);
  in.class_has_input[0] = true;
  in.class_has_output[output] = true;
  return in;
}

}  // namespace

TEST(MemoryPlan, ReleasesAfterLastReadAndReusesDeadIntermediatesInPlace) {
  // %1 = k(%0); %2 = mm(%1, %0); %3 = k(%2); %4 = k(%3, %1)  (output %4)
  MemoryPlanInput in = chain_input({kernel_step({0}, 1, 256, {0}), eager_step({1, 0}, 2), kernel_step({2}, 3, 256, {0}),
                                    kernel_step({3, 1}, 4, 256, {0, 1})},
                                   5, 4, false);
  const MemoryPlan plan = plan_memory(in);
  EXPECT_EQ(plan.in_place[0][0], -1) << "the graph input is the caller's";
  EXPECT_EQ(plan.in_place[2][0], 0) << "%2 dies at step 2";
  EXPECT_EQ(plan.in_place[3][0], 0) << "%3 dies at step 3";
  EXPECT_EQ(plan.in_place_count, 2);
  EXPECT_EQ(plan.release[1], (std::vector<size_t>{0}));
  EXPECT_EQ(plan.release[3], (std::vector<size_t>{1, 3}));
  EXPECT_EQ(plan.arena_bytes, 0);
}

TEST(MemoryPlan, NeverInPlaceOfAStorageReadLaterOrShared) {
  // %1 = k(%0); %2 = view(%1); %3 = k(%1); %4 = k(%2, %3): %1's storage is read at step 3 through %2
  MemoryPlanInput in = chain_input({kernel_step({0}, 1, 64, {0}), eager_step({1}, 2), kernel_step({1}, 3, 64, {0}),
                                    kernel_step({2, 3}, 4, 64, {1})},
                                   5, 4, false);
  in.storage_class[2] = 1;  // %2 is a view of %1
  const MemoryPlan plan = plan_memory(in);
  EXPECT_EQ(plan.in_place[2][0], -1) << "%1's storage is read at step 3 through %2";
  EXPECT_EQ(plan.in_place[3][0], 1) << "%3 dies here and the kernel reads nothing else of its storage";
}

TEST(MemoryPlan, ArenaRangesOverlapOnlyWhenLifetimesDoNot) {
  // %1 = k(%0); %2 = k(%1); %3 = mm(%2, %0); %4 = k(%3); %5 = mm(%4, %0)  (output %5)
  // arena: %1 [0, 1], %2 [1, 2] (not in place of %1: other layout), %4 [3, 4]
  MemoryPlanInput in = chain_input({kernel_step({0}, 1, 1000, {}), kernel_step({1}, 2, 2000, {}), eager_step({2, 0}, 3),
                                    kernel_step({3}, 4, 100, {}), eager_step({4, 0}, 5)},
                                   6, 5, true);
  const MemoryPlan plan = plan_memory(in);
  const int64_t a1 = plan.arena_offset[0][0], a2 = plan.arena_offset[1][0], a4 = plan.arena_offset[3][0];
  ASSERT_GE(a1, 0);
  ASSERT_GE(a2, 0);
  ASSERT_GE(a4, 0);
  EXPECT_TRUE(a1 + 1024 <= a2 || a2 + 2048 <= a1) << plan.str();  // %1 and %2 are live together at step 1
  EXPECT_EQ(plan.arena_count, 3);
  EXPECT_EQ(plan.arena_bytes, 1024 + 2048) << "%4 fits where %1 or %2 was: " << plan.str();
  EXPECT_EQ(plan.arena_unshared_bytes, 1024 + 2048 + 128);
}

TEST(MemoryPlan, ArenaOutputInPlaceOfArenaInputSharesItsRange) {
  // %1 = k(%0); %2 = k(%1) same layout; %3 = mm(%2, %0)  (output %3)
  MemoryPlanInput in = chain_input({kernel_step({0}, 1, 512, {0}), kernel_step({1}, 2, 512, {0}), eager_step({2, 0}, 3)},
                                   4, 3, true);
  const MemoryPlan plan = plan_memory(in);
  EXPECT_EQ(plan.in_place[1][0], 0);
  EXPECT_EQ(plan.arena_offset[0][0], plan.arena_offset[1][0]);
  EXPECT_EQ(plan.arena_bytes, 512);
}

TEST(MemoryPlan, AHeapOutputNeverTakesArenaMemory) {
  // %1 = k(%0) (arena); %2 = view(%1); %3 = k(%2) is the graph output: it may not take %2's range in place
  MemoryPlanInput in = chain_input({kernel_step({0}, 1, 256, {0}), eager_step({1}, 2), kernel_step({2}, 3, 256, {0})},
                                   4, 3, true);
  in.storage_class[2] = 1;
  const MemoryPlan plan = plan_memory(in);
  EXPECT_GE(plan.arena_offset[0][0], 0);
  EXPECT_EQ(plan.in_place[2][0], -1) << plan.str();
  EXPECT_EQ(plan.arena_offset[2][0], -1);
}
