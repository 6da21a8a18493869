// The profiler's recorder and its dispatcher fallback: ops nest as they call
// each other, sessions do not leak into each other, and nothing is recorded
// while no session runs. See Note [What the profiler records].
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "eager/dispatch/LocalDispatchKeySet.h"
#include "eager/dispatch/ProfilerFallback.h"
#include "kiln/generated/Functions.h"

using namespace kiln;

namespace {

std::vector<std::string> range_names(const std::vector<profiler::Event>& events) {
  std::vector<std::string> names;
  for (const auto& e : events) {
    if (e.kind == profiler::EventKind::Range) names.push_back(e.name);
  }
  return names;
}

}  // namespace

TEST(ProfilerEvents, RecordsOpsWithShapesBetweenStartAndStop) {
  const Tensor a = kiln::ones({2, 3});
  const Tensor b = kiln::ones({2, 3});
  profiler::Options options;
  options.record_shapes = true;
  profiler::start_profiling(options);
  EXPECT_TRUE(profiler::is_active());
  (void)kiln::add(a, b);
  const std::vector<profiler::Event> events = profiler::stop_profiling();
  EXPECT_FALSE(profiler::is_active());
  ASSERT_EQ(range_names(events), std::vector<std::string>{"kiln::add"});
  const profiler::Event& add = events[0];
  EXPECT_EQ(add.category, "cpu_op");
  EXPECT_LE(add.start_ns, add.end_ns);
  ASSERT_EQ(add.shapes.size(), 3u);  // self, other, alpha
  EXPECT_EQ(add.shapes[0].kind, profiler::ArgumentShape::Kind::Tensor);
  EXPECT_EQ(add.shapes[0].sizes, (std::vector<std::vector<int64_t>>{{2, 3}}));
  EXPECT_EQ(add.shapes[2].kind, profiler::ArgumentShape::Kind::None);
}

TEST(ProfilerEvents, NothingIsRecordedWhileOff) {
  const Tensor a = kiln::ones({4});
  (void)kiln::mul(a, a);  // before any session
  {
    profiler::RecordScope scope("outside", "user_annotation");
    EXPECT_FALSE(scope.recording());
  }
  profiler::start_profiling({});
  const std::vector<profiler::Event> events = profiler::stop_profiling();
  EXPECT_TRUE(events.empty());
  (void)kiln::mul(a, a);  // after a session: the fallback is registered, the key off
  profiler::start_profiling({});
  EXPECT_TRUE(profiler::stop_profiling().empty());
}

TEST(ProfilerEvents, ARangeOpenAcrossSessionsIsDropped) {
  profiler::start_profiling({});
  const profiler::RangeHandle stale = profiler::begin_range("first session", "user_annotation");
  (void)profiler::stop_profiling();
  profiler::start_profiling({});
  profiler::end_range(stale);  // belongs to the stopped session: no effect on this one
  const profiler::RangeHandle open = profiler::begin_range("second session", "user_annotation");
  profiler::end_range(open);
  const std::vector<profiler::Event> events = profiler::stop_profiling();
  ASSERT_EQ(range_names(events), std::vector<std::string>{"second session"});
  EXPECT_GE(events[0].end_ns, events[0].start_ns);
}

TEST(ProfilerEvents, MemoryEventsOnlyWhenAsked) {
  profiler::start_profiling({});
  { const Tensor t = kiln::ones({1024}); }
  std::vector<profiler::Event> events = profiler::stop_profiling();
  for (const auto& e : events) EXPECT_NE(e.kind, profiler::EventKind::Memory);
  profiler::Options options;
  options.profile_memory = true;
  profiler::start_profiling(options);
  { const Tensor t = kiln::ones({1024}); }
  events = profiler::stop_profiling();
  int64_t net = 0;
  int allocations = 0;
  for (const auto& e : events) {
    if (e.kind != profiler::EventKind::Memory) continue;
    net += e.bytes;
    allocations += e.bytes > 0;
  }
  EXPECT_EQ(allocations, 1);
  EXPECT_EQ(net, 0);  // allocated and freed inside the session
}

TEST(ProfilerEvents, OneSessionAtATime) {
  profiler::start_profiling({});
  EXPECT_THROW(profiler::start_profiling({}), Error);
  (void)profiler::stop_profiling();
}

TEST(ProfilerEvents, AThreadDropsTheKeyOfASessionStoppedElsewhere) {
  const Tensor a = kiln::ones({2});
  profiler::start_profiling({});
  std::vector<profiler::Event> events;
  std::thread([&] { events = profiler::stop_profiling(); }).join();
  EXPECT_TRUE(local_dispatch_key_set().included.has(DispatchKey::Profiler));
  (void)kiln::add(a, a);  // reaches the fallback once, which turns the key off for this thread
  EXPECT_FALSE(local_dispatch_key_set().included.has(DispatchKey::Profiler));
  profiler::start_profiling({});
  EXPECT_TRUE(profiler::stop_profiling().empty());
}
