// The Philox engine against Random123's known answers, the CPU generator's
// state and reservations, and the SIMD kernels against the scalar reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "eager/core/Error.h"
#include "eager/dispatch/Boxing.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/random/Generator.h"
#include "eager/kernels/random/Philox.h"

using namespace kiln;

namespace {

// Random123's kat_vectors, the three "philox4x32 10" lines.
struct Kat {
  random::PhiloxCounter counter;
  random::PhiloxKey key;
  random::PhiloxCounter expected;
};
constexpr Kat kKats[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};
static_assert(random::philox4x32_10(kKats[0].counter, kKats[0].key) == kKats[0].expected, "constexpr Philox");

TEST(Philox, MatchesRandom123KnownAnswers) {
  for (const Kat& kat : kKats) EXPECT_EQ(random::philox4x32_10(kat.counter, kat.key), kat.expected);
}

TEST(Philox, GroupWordsAreWordMajorOverSixteenBlocks) {
  uint32_t words[random::kGroupWords];
  random::philox_group_words(42, 1000, words);
  for (int r = 0; r < 16; ++r) {
    const auto block = random::philox_block(42, 1000 + static_cast<uint64_t>(r));
    for (int w = 0; w < 4; ++w) EXPECT_EQ(words[16 * w + r], block[static_cast<size_t>(w)]);
  }
}

TEST(CpuGenerator, SeedOffsetAndStateRoundTrip) {
  CpuGeneratorImpl gen(7);
  EXPECT_EQ(gen.current_seed(), 7u);
  const PhiloxInputs first = gen.reserve(16);
  EXPECT_EQ(first.seed, 7u);
  EXPECT_EQ(first.offset, 0u);
  EXPECT_EQ(gen.offset(), 16u);
  const std::vector<uint8_t> state = gen.state();
  ASSERT_EQ(state.size(), CpuGeneratorImpl::kStateBytes);
  gen.set_current_seed(9);
  EXPECT_EQ(gen.offset(), 0u);  // manual_seed rewinds
  gen.set_state(state);
  EXPECT_EQ(gen.current_seed(), 7u);
  EXPECT_EQ(gen.offset(), 16u);
  auto clone = gen.clone();
  EXPECT_EQ(clone->state(), state);
}

TEST(CpuGenerator, RejectsForeignStates) {
  CpuGeneratorImpl gen;
  std::vector<uint8_t> short_state(5);
  EXPECT_THROW(gen.set_state(short_state), Error);
  std::vector<uint8_t> wrong_tag(CpuGeneratorImpl::kStateBytes, 0);
  EXPECT_THROW(gen.set_state(wrong_tag), Error);
}

TEST(CpuGenerator, ConcurrentReservationsAreDisjoint) {
  CpuGeneratorImpl gen;
  constexpr int kThreads = 4, kPerThread = 1000;
  std::vector<std::vector<uint64_t>> offsets(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) offsets[static_cast<size_t>(t)].push_back(gen.reserve(3).offset);
    });
  }
  for (auto& th : threads) th.join();
  std::vector<uint64_t> all;
  for (const auto& o : offsets) all.insert(all.end(), o.begin(), o.end());
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], 3 * i);
  EXPECT_EQ(gen.offset(), 3u * kThreads * kPerThread);
}

TEST(CpuGenerator, DefaultAndOtherDevices) {
  EXPECT_EQ(&cpu_generator_or_default(std::nullopt), default_cpu_generator().impl());
  const Generator mine = make_cpu_generator(3);
  EXPECT_EQ(&cpu_generator_or_default(mine), mine.impl());
  EXPECT_EQ(default_cpu_generator().device(), Device(DeviceType::CPU));
}

TEST(CpuGenerator, BoxesAsAnIValue) {
  const Generator g = make_cpu_generator(5);
  IValue v = boxing::to_ivalue(std::optional<Generator>(g));
  EXPECT_EQ(v.tag(), IValue::Tag::Generator);
  EXPECT_EQ(boxing::FromIValue<const std::optional<Generator>&>::get(v), g);
  IValue none = boxing::to_ivalue(std::optional<Generator>());
  EXPECT_FALSE(boxing::FromIValue<const std::optional<Generator>&>::get(none).has_value());
  IValue format = boxing::to_ivalue(MemoryFormat::ChannelsLast);
  EXPECT_EQ(boxing::FromIValue<MemoryFormat>::get(format), MemoryFormat::ChannelsLast);
}

// The SIMD Philox of the kernels gives the reference words: randint over
// [0, 2^32) stores each element's word as it is.
TEST(RandomKernels, SimdPhiloxMatchesTheScalarReference) {
  const Generator g = make_cpu_generator(0x123456789abcdefull);
  g->set_offset((uint64_t{1} << 32) - 5);  // the counter's low word wraps inside the group
  const int64_t n = 2 * random::kGroupWords + 7;
  const Tensor t = kiln::randint(0, int64_t{1} << 32, {n}, g, DType::Int64);
  std::vector<uint32_t> words(static_cast<size_t>(3 * random::kGroupWords));
  for (int64_t grp = 0; grp < 3; ++grp) {
    random::philox_group_words(0x123456789abcdefull, (uint64_t{1} << 32) - 5 + static_cast<uint64_t>(16 * grp),
                               words.data() + grp * random::kGroupWords);
  }
  const int64_t* v = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(static_cast<uint64_t>(v[i]), words[static_cast<size_t>(i)]) << i;
  EXPECT_EQ(g->offset(), (uint64_t{1} << 32) - 5 + 48);  // three groups of 16 blocks
}

TEST(RandomKernels, ValuesDoNotDependOnTheThreadCount) {
  const int threads = get_num_threads();
  auto draw = [] {
    const Generator g = make_cpu_generator(11);
    return kiln::randn({300000}, g);
  };
  set_num_threads(1);
  const Tensor one = draw();
  set_num_threads(std::max(2, threads));
  const Tensor many = draw();
  set_num_threads(threads);
  ASSERT_EQ(one.numel(), many.numel());
  EXPECT_EQ(0, std::memcmp(one.data_ptr(), many.data_ptr(), static_cast<size_t>(one.nbytes())));
}

}  // namespace
