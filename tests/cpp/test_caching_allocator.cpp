// Caching allocator tests: size classes, reuse, splitting, statistics, errors, threads, streams.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "eager/core/Error.h"
#include "eager/memory/AddressSanitizer.h"
#include "eager/memory/CachingAllocator.h"
#include "eager/memory/CpuAllocator.h"

namespace kiln::memory {
namespace {

constexpr size_t kKiB = size_t{1} << 10;  // bytes
constexpr size_t kMiB = size_t{1} << 20;  // bytes

/// Real CPU memory with a byte budget; records every raw call and checks that
/// raw_free gets back the size raw_alloc was asked for.
class BudgetRawAllocator final : public RawAllocator {
 public:
  explicit BudgetRawAllocator(size_t budget = std::numeric_limits<size_t>::max())
      : budget_(budget) {}
  ~BudgetRawAllocator() override { EXPECT_TRUE(outstanding_.empty()) << "segments leaked"; }

  void* raw_alloc(size_t nbytes) override {
    std::lock_guard<std::mutex> guard(mutex_);
    ++alloc_calls_;
    if (nbytes > budget_ - used_) return nullptr;
    void* ptr = cpu_raw_allocator().raw_alloc(nbytes);
    if (ptr == nullptr) return nullptr;
    used_ += nbytes;
    last_alloc_size_ = nbytes;
    outstanding_.emplace(ptr, nbytes);
    return ptr;
  }
  void raw_free(void* ptr, size_t nbytes) override {
    std::lock_guard<std::mutex> guard(mutex_);
    ++free_calls_;
    auto it = outstanding_.find(ptr);
    ASSERT_NE(it, outstanding_.end()) << "raw_free of a pointer raw_alloc did not return";
    EXPECT_EQ(it->second, nbytes) << "raw_free size differs from the raw_alloc size";
    used_ -= it->second;
    outstanding_.erase(it);
    cpu_raw_allocator().raw_free(ptr, nbytes);
  }
  [[nodiscard]] const char* name() const override { return "fake"; }

  int64_t alloc_calls() const { return alloc_calls_; }  // including failed ones
  int64_t free_calls() const { return free_calls_; }
  size_t used() const { return used_; }
  size_t last_alloc_size() const { return last_alloc_size_; }

 private:
  std::mutex mutex_;
  size_t budget_;  // bytes
  size_t used_ = 0;  // bytes
  size_t last_alloc_size_ = 0;  // bytes
  int64_t alloc_calls_ = 0;
  int64_t free_calls_ = 0;
  std::unordered_map<void*, size_t> outstanding_;
};

bool is_aligned(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % kAlignment == 0; }

/// Runs `fn` and returns the kiln::Error it must throw.
template <typename Fn>
Error expect_error(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected a kiln::Error";
  return Error(ErrorKind::Runtime, "");
}

struct RoundingCase {
  size_t nbytes;        // requested
  size_t block_size;    // allocation_size() of the first allocation
  size_t segment_size;  // reserved by that first allocation
};

TEST(CachingAllocator, RoundsSizesAndAligns) {
  const RoundingCase cases[] = {
      {1, 512, 2 * kMiB},
      {63, 512, 2 * kMiB},
      {511, 512, 2 * kMiB},
      {512, 512, 2 * kMiB},
      {513, 1024, 2 * kMiB},
      {1000, 1024, 2 * kMiB},
      {100 * kKiB + 1, 100 * kKiB + 512, 2 * kMiB},
      {kMiB, kMiB, 2 * kMiB},
      {kMiB + 1, kMiB + 512, 20 * kMiB},
      {5 * kMiB + 3, 5 * kMiB + 512, 20 * kMiB},
      {10 * kMiB, 10 * kMiB, 10 * kMiB},
      // 11 MiB gets a 12 MiB segment; a 1 MiB remainder is too small to split off.
      {11 * kMiB, 12 * kMiB, 12 * kMiB},
      {12 * kMiB + 1, 12 * kMiB + 512, 14 * kMiB},
      {13 * kMiB + 1, 14 * kMiB, 14 * kMiB},  // remainder 1 MiB - 512 stays with the block
      {64 * kMiB, 64 * kMiB, 64 * kMiB},
  };
  for (const RoundingCase& c : cases) {
    SCOPED_TRACE("nbytes=" + std::to_string(c.nbytes));
    BudgetRawAllocator raw;
    CachingAllocator allocator(raw);
    void* a = allocator.allocate(c.nbytes);
    void* b = allocator.allocate(c.nbytes);
    EXPECT_TRUE(is_aligned(a));
    EXPECT_TRUE(is_aligned(b));
    EXPECT_EQ(allocator.allocation_size(a), c.block_size);
    EXPECT_EQ(raw.last_alloc_size(), c.segment_size);
    const MemoryStats stats = allocator.stats();
    EXPECT_EQ(stats.allocated_bytes.current,
              static_cast<int64_t>(c.block_size + allocator.allocation_size(b)));
    std::memset(a, 0xab, c.nbytes);
    std::memset(b, 0xcd, c.nbytes);
    allocator.deallocate(a);
    allocator.deallocate(b);
  }
}

TEST(CachingAllocator, ZeroBytesIsNullptr) {
  BudgetRawAllocator raw;
  CachingAllocator allocator(raw);
  EXPECT_EQ(allocator.allocate(0), nullptr);
  allocator.deallocate(nullptr);
  EXPECT_EQ(allocator.allocation_size(nullptr), 0u);
  EXPECT_EQ(allocator.stats().allocation.allocated, 0);
  EXPECT_EQ(raw.alloc_calls(), 0);
}

TEST(CachingAllocator, ReusesFreedBlock) {
  for (size_t nbytes : {size_t{256}, 300 * kKiB, 4 * kMiB, 32 * kMiB}) {
    SCOPED_TRACE("nbytes=" + std::to_string(nbytes));
    BudgetRawAllocator raw;
    CachingAllocator allocator(raw);
    void* first = allocator.allocate(nbytes);
    allocator.deallocate(first);
    void* second = allocator.allocate(nbytes);
    EXPECT_EQ(second, first);
    EXPECT_EQ(allocator.stats().num_os_allocs, 1);
    allocator.deallocate(second);
  }
}

TEST(CachingAllocator, HandleFreesWhatAllocateWithHandleGave) {
  // Tiny (quick-listed), small-pool and large-pool sizes, caching on and off.
  for (bool caching : {true, false}) {
    for (size_t nbytes : {size_t{100}, 300 * kKiB, 32 * kMiB}) {
      SCOPED_TRACE("caching=" + std::to_string(caching) + " nbytes=" + std::to_string(nbytes));
      BudgetRawAllocator raw;
      CachingAllocator allocator(raw, CachingAllocatorOptions{.caching_enabled = caching});
      void* handle = nullptr;
      void* first = allocator.allocate_with_handle(nbytes, &handle);
      ASSERT_NE(handle, nullptr);
      EXPECT_EQ(allocator.allocation_size(first), (nbytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize);
      allocator.deallocate_handle(handle);
      EXPECT_EQ(allocator.stats().allocation.current, 0);
      EXPECT_EQ(allocator.stats().allocated_bytes.current, 0);
      // The freed pointer is no live allocation, whether cached unmerged or merged.
      EXPECT_EQ(expect_error([&] { (void)allocator.allocation_size(first); }).kind(), ErrorKind::Runtime);
      EXPECT_EQ(expect_error([&] { allocator.deallocate(first); }).kind(), ErrorKind::Runtime);
      // Reused as before, and a pointer from allocate_with_handle may also go back through deallocate.
      void* second = allocator.allocate_with_handle(nbytes, &handle);
      if (caching) EXPECT_EQ(second, first);
      allocator.deallocate(second);
      EXPECT_EQ(allocator.stats().allocation.current, 0);
    }
  }
  BudgetRawAllocator raw;
  CachingAllocator allocator(raw);
  void* handle = &raw;
  EXPECT_EQ(allocator.allocate_with_handle(0, &handle), nullptr);
  EXPECT_EQ(handle, nullptr);
  allocator.deallocate_handle(nullptr);  // a no-op, as deallocate(nullptr)
}

TEST(CachingAllocator, LiveBlocksNeverOverlap) {
  BudgetRawAllocator raw;
  CachingAllocator allocator(raw);
  std::mt19937 rng(7);
  const size_t sizes[] = {1, 700, 4 * kKiB, 200 * kKiB, kMiB, 3 * kMiB, 12 * kMiB};
  std::vector<void*> live;
  for (int i = 0; i < 300; ++i) {
    if (!live.empty() && rng() % 3 == 0) {
      const size_t victim = rng() % live.size();
      allocator.deallocate(live[victim]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
    }
    live.push_back(allocator.allocate(sizes[rng() % std::size(sizes)]));
  }
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (void* ptr : live) {
    const auto begin = reinterpret_cast<uintptr_t>(ptr);
    ranges.emplace_back(begin, begin + allocator.allocation_size(ptr));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) EXPECT_LE(ranges[i - 1].second, ranges[i].first);
  for (void* ptr : live) allocator.deallocate(ptr);
}

struct SplitCase {
  const char* name;
  size_t first;   // bytes; carves a segment whose remainder is exactly `second`
  size_t second;  // bytes
  size_t segment;  // bytes
};

TEST(CachingAllocator, SplitsAndMergesSegments) {
  const SplitCase cases[] = {
      {"small pool", kMiB, kMiB, 2 * kMiB},
      {"large pool", 4 * kMiB, 16 * kMiB, 20 * kMiB},
      {"large pool, uneven", kMiB + 512 * kKiB, 18 * kMiB + 512 * kKiB, 20 * kMiB},
  };
  for (const SplitCase& c : cases) {
    SCOPED_TRACE(c.name);
    for (bool free_first_half_first : {true, false}) {
      BudgetRawAllocator raw;
      CachingAllocator allocator(raw);
      void* a = allocator.allocate(c.first);
      void* b = allocator.allocate(c.second);
      EXPECT_EQ(b, static_cast<char*>(a) + c.first) << "second half comes from the same segment";
      MemoryStats stats = allocator.stats();
      EXPECT_EQ(stats.num_os_allocs, 1);
      EXPECT_EQ(stats.reserved_bytes.current, static_cast<int64_t>(c.segment));

      allocator.deallocate(free_first_half_first ? a : b);
      allocator.empty_cache();  // the segment is half used: nothing to return
      EXPECT_EQ(allocator.stats().num_os_frees, 0);
      allocator.deallocate(free_first_half_first ? b : a);
      allocator.empty_cache();  // merged back into one free segment
      stats = allocator.stats();
      EXPECT_EQ(stats.num_os_frees, 1);
      EXPECT_EQ(stats.reserved_bytes.current, 0);
      EXPECT_EQ(stats.segment.current, 0);
      EXPECT_EQ(raw.used(), 0u);
    }
  }
}

TEST(CachingAllocator, MergedSegmentServesAWholeSegmentRequest) {
  BudgetRawAllocator raw;
  CachingAllocator allocator(raw);
  void* a = allocator.allocate(512 * kKiB);
  void* b = allocator.allocate(512 * kKiB);
  void* c = allocator.allocate(kMiB);
  allocator.deallocate(b);
  allocator.deallocate(a);
  allocator.deallocate(c);
  void* whole = allocator.allocate(kMiB);  // best fit is the segment's start, merged
  EXPECT_EQ(whole, a);
  void* rest = allocator.allocate(kMiB);
  EXPECT_EQ(rest, c);
  EXPECT_EQ(allocator.stats().num_os_allocs, 1);
  allocator.deallocate(whole);
  allocator.deallocate(rest);
}

TEST(CachingAllocator, SteadyLoopMakesNoOsAllocations) {
  constexpr size_t kLoopSize = 64 * kMiB;  // bytes
  CachingAllocator allocator(cpu_raw_allocator());
  for (int iteration = 0; iteration < 20; ++iteration) {
    void* ptr = allocator.allocate(kLoopSize);
    static_cast<char*>(ptr)[0] = 1;
    static_cast<char*>(ptr)[kLoopSize - 1] = 1;
    allocator.deallocate(ptr);
    const MemoryStats stats = allocator.stats();
    EXPECT_EQ(stats.num_os_allocs, 1) << "iteration " << iteration;
    EXPECT_EQ(stats.num_os_frees, 0) << "iteration " << iteration;
  }
  EXPECT_EQ(allocator.stats().reserved_bytes.current, static_cast<int64_t>(kLoopSize));
}

TEST(CachingAllocator, PeakStatsAndReset) {
  BudgetRawAllocator raw;
  CachingAllocator allocator(raw);
  void* a = allocator.allocate(kMiB);
  void* b = allocator.allocate(kMiB);
  allocator.deallocate(a);
  MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes.current, static_cast<int64_t>(kMiB));
  EXPECT_EQ(stats.allocated_bytes.peak, static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(stats.allocated_bytes.allocated, static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(stats.allocated_bytes.freed, static_cast<int64_t>(kMiB));
  EXPECT_EQ(stats.allocation.current, 1);
  EXPECT_EQ(stats.allocation.peak, 2);
  EXPECT_EQ(stats.active_bytes.peak, static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(stats.reserved_bytes.peak, static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(stats.segment.peak, 1);

  allocator.reset_peak_stats();
  stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes.peak, static_cast<int64_t>(kMiB));
  EXPECT_EQ(stats.allocation.peak, 1);
  EXPECT_EQ(stats.allocated_bytes.allocated, static_cast<int64_t>(2 * kMiB)) << "cumulative";

  void* c = allocator.allocate(100);
  EXPECT_EQ(allocator.stats().allocated_bytes.peak, static_cast<int64_t>(kMiB + 512));
  allocator.deallocate(b);
  allocator.deallocate(c);
  stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes.current, 0);
  EXPECT_EQ(stats.allocated_bytes.allocated, stats.allocated_bytes.freed);
  EXPECT_EQ(stats.allocation.allocated, 3);
  EXPECT_EQ(stats.allocation.freed, 3);
}

TEST(CachingAllocator, FlatDictHasPytorchKeys) {
  BudgetRawAllocator raw;
  CachingAllocator allocator(raw);
  void* ptr = allocator.allocate(1000);
  const MemoryStats stats = allocator.stats();
  const auto flat = stats.as_flat_dict();
  EXPECT_EQ(flat.size(), 5u * 4u + 4u);
  auto lookup = [&flat](std::string_view key) -> int64_t {
    for (const auto& [name, value] : flat) {
      if (name == key) return value;
    }
    ADD_FAILURE() << "missing key " << key;
    return -1;
  };
  for (const char* stat : {"allocated_bytes", "reserved_bytes", "active_bytes", "allocation",
                           "segment"}) {
    for (const char* field : {"current", "peak", "allocated", "freed"}) {
      lookup(std::string(stat) + ".all." + field);
    }
  }
  EXPECT_EQ(lookup("allocated_bytes.all.current"), 1024);
  EXPECT_EQ(lookup("reserved_bytes.all.peak"), static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(lookup("allocation.all.allocated"), 1);
  EXPECT_EQ(lookup("num_device_alloc"), 1);
  EXPECT_EQ(lookup("num_device_free"), 0);
  EXPECT_EQ(lookup("num_alloc_retries"), 0);
  EXPECT_EQ(lookup("num_ooms"), 0);
  allocator.deallocate(ptr);
}

TEST(CachingAllocator, CachingDisabledMapsOneToOne) {
  BudgetRawAllocator raw;
  CachingAllocator allocator(raw, CachingAllocatorOptions{.caching_enabled = false});
  EXPECT_FALSE(allocator.caching_enabled());
  int64_t expected_calls = 0;
  for (size_t nbytes : {size_t{1}, size_t{700}, kMiB, 12 * kMiB}) {
    SCOPED_TRACE("nbytes=" + std::to_string(nbytes));
    for (int i = 0; i < 3; ++i) {
      void* ptr = allocator.allocate(nbytes);
      ++expected_calls;
      EXPECT_TRUE(is_aligned(ptr));
      EXPECT_EQ(raw.alloc_calls(), expected_calls);
      EXPECT_EQ(raw.last_alloc_size(), nbytes) << "the OS sees the exact request";
      EXPECT_EQ(allocator.allocation_size(ptr), (nbytes + 511) / 512 * 512);
      allocator.deallocate(ptr);
      EXPECT_EQ(raw.free_calls(), expected_calls);
      EXPECT_EQ(raw.used(), 0u);
    }
  }
  void* a = allocator.allocate(100);
  void* b = allocator.allocate(kMiB);
  MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes.current, static_cast<int64_t>(512 + kMiB));
  EXPECT_EQ(stats.reserved_bytes.current, stats.allocated_bytes.current);
  EXPECT_EQ(stats.segment.current, 2);
  allocator.deallocate(a);
  allocator.deallocate(b);
  stats = allocator.stats();
  EXPECT_EQ(stats.num_os_allocs, expected_calls + 2);
  EXPECT_EQ(stats.num_os_frees, expected_calls + 2);
  EXPECT_EQ(stats.allocation.allocated, expected_calls + 2);
  EXPECT_EQ(stats.reserved_bytes.current, 0);
}

TEST(CachingAllocator, OutOfMemoryNamesTheSizeAndLeavesAllocatorUsable) {
  BudgetRawAllocator raw(64 * kMiB);
  CachingAllocator allocator(raw);
  void* held = allocator.allocate(40 * kMiB);
  const Error error = expect_error([&] { (void)allocator.allocate(40 * kMiB); });
  EXPECT_EQ(error.kind(), ErrorKind::OutOfMemory);
  const std::string message = error.what();
  EXPECT_NE(message.find("fake out of memory"), std::string::npos) << message;
  EXPECT_NE(message.find("40.00 MiB (41943040 bytes)"), std::string::npos) << message;
  EXPECT_NE(message.find("40.00 MiB allocated and 40.00 MiB reserved"), std::string::npos)
      << message;
  MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.num_ooms, 1);
  EXPECT_EQ(stats.num_alloc_retries, 1);
  EXPECT_EQ(stats.allocation.current, 1);
  EXPECT_EQ(stats.allocated_bytes.current, static_cast<int64_t>(40 * kMiB));

  allocator.deallocate(held);
  void* again = allocator.allocate(40 * kMiB);
  EXPECT_EQ(again, held);
  allocator.deallocate(again);
}

TEST(CachingAllocator, RawFailureFreesCacheAndRetries) {
  BudgetRawAllocator raw(64 * kMiB);
  CachingAllocator allocator(raw);
  allocator.deallocate(allocator.allocate(40 * kMiB));  // cached, too small for what follows
  void* ptr = allocator.allocate(48 * kMiB);
  const MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.num_alloc_retries, 1);
  EXPECT_EQ(stats.num_os_frees, 1);
  EXPECT_EQ(stats.num_ooms, 0);
  EXPECT_EQ(stats.reserved_bytes.current, static_cast<int64_t>(48 * kMiB));
  allocator.deallocate(ptr);
}

TEST(CachingAllocator, AbsurdSizeIsOutOfMemory) {
  BudgetRawAllocator raw;
  for (bool caching : {true, false}) {
    CachingAllocator allocator(raw, CachingAllocatorOptions{.caching_enabled = caching});
    const Error error = expect_error([&] { (void)allocator.allocate(SIZE_MAX); });
    EXPECT_EQ(error.kind(), ErrorKind::OutOfMemory);
    EXPECT_NE(std::string(error.what()).find(std::to_string(SIZE_MAX)), std::string::npos);
    EXPECT_EQ(allocator.stats().num_ooms, 1);
  }
  EXPECT_EQ(raw.alloc_calls(), 0);
}

TEST(CachingAllocator, ForeignPointerIsAnError) {
  BudgetRawAllocator raw;
  for (bool caching : {true, false}) {
    CachingAllocator allocator(raw, CachingAllocatorOptions{.caching_enabled = caching});
    int local = 0;
    Error error = expect_error([&] { allocator.deallocate(&local); });
    EXPECT_EQ(error.kind(), ErrorKind::Runtime);
    EXPECT_NE(std::string(error.what()).find("did not allocate"), std::string::npos);
    EXPECT_EQ(expect_error([&] { (void)allocator.allocation_size(&local); }).kind(),
              ErrorKind::Runtime);

    void* ptr = allocator.allocate(100);
    void* interior = static_cast<char*>(ptr) + 64;
    EXPECT_EQ(expect_error([&] { allocator.deallocate(interior); }).kind(), ErrorKind::Runtime);
    allocator.deallocate(ptr);
    error = expect_error([&] { allocator.deallocate(ptr); });  // double free
    EXPECT_EQ(error.kind(), ErrorKind::Runtime);
    const MemoryStats stats = allocator.stats();
    EXPECT_EQ(stats.allocation.current, 0);
    EXPECT_EQ(stats.allocation.freed, 1);
  }
}

TEST(CachingAllocator, ThreadsKeepStatsConsistent) {
  constexpr size_t kThreads = 4;
  constexpr int kIterations = 2000;
  constexpr int kMaxLive = 8;  // per thread
  const size_t sizes[] = {8, 100, 4 * kKiB, 64 * kKiB, 900 * kKiB, 3 * kMiB, 11 * kMiB};
  BudgetRawAllocator raw;
  CachingAllocator allocator(raw);
  std::vector<std::thread> threads;
  std::vector<int> corrupted(kThreads, 0);
  for (size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      const auto tag = static_cast<unsigned char>(t + 1);
      const auto stream = static_cast<StreamId>(t % 2);
      std::vector<std::pair<void*, size_t>> live;
      auto release = [&](size_t index) {
        auto [ptr, nbytes] = live[index];
        const auto* bytes = static_cast<unsigned char*>(ptr);
        if (bytes[0] != tag || bytes[nbytes - 1] != tag) ++corrupted[t];
        allocator.deallocate(ptr);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(index));
      };
      for (int i = 0; i < kIterations; ++i) {
        if (live.size() == kMaxLive || (!live.empty() && rng() % 2 == 0)) {
          release(rng() % live.size());
          continue;
        }
        const size_t nbytes = sizes[rng() % std::size(sizes)];
        void* ptr = allocator.allocate(nbytes, stream);
        static_cast<unsigned char*>(ptr)[0] = tag;
        static_cast<unsigned char*>(ptr)[nbytes - 1] = tag;
        live.emplace_back(ptr, nbytes);
      }
      while (!live.empty()) release(live.size() - 1);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t t = 0; t < kThreads; ++t) EXPECT_EQ(corrupted[t], 0) << "thread " << t;

  MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.allocation.current, 0);
  EXPECT_GT(stats.allocation.allocated, static_cast<int64_t>(kThreads) * kIterations / 4);
  EXPECT_EQ(stats.allocation.allocated, stats.allocation.freed);
  EXPECT_EQ(stats.allocated_bytes.current, 0);
  EXPECT_EQ(stats.allocated_bytes.allocated, stats.allocated_bytes.freed);
  EXPECT_EQ(stats.active_bytes.current, 0);
  EXPECT_EQ(static_cast<size_t>(stats.reserved_bytes.current), raw.used());
  EXPECT_EQ(stats.num_os_allocs - stats.num_os_frees, stats.segment.current);
  allocator.empty_cache();
  stats = allocator.stats();
  EXPECT_EQ(stats.reserved_bytes.current, 0);
  EXPECT_EQ(stats.segment.current, 0);
  EXPECT_EQ(raw.used(), 0u);
}

TEST(CachingAllocator, BlocksStayOnTheirStream) {
  for (size_t nbytes : {size_t{4096}, 30 * kMiB}) {
    SCOPED_TRACE("nbytes=" + std::to_string(nbytes));
    BudgetRawAllocator raw;
    CachingAllocator allocator(raw);
    void* on_one = allocator.allocate(nbytes, /*stream=*/1);
    allocator.deallocate(on_one);
    void* on_two = allocator.allocate(nbytes, /*stream=*/2);
    EXPECT_NE(on_two, on_one);
    EXPECT_EQ(allocator.stats().num_os_allocs, 2) << "stream 2 got its own segment";
    void* on_zero = allocator.allocate(nbytes, /*stream=*/0);
    EXPECT_NE(on_zero, on_one);
    void* back_on_one = allocator.allocate(nbytes, /*stream=*/1);
    EXPECT_EQ(back_on_one, on_one);
    EXPECT_EQ(allocator.stats().num_os_allocs, 3);
    allocator.deallocate(on_two);
    allocator.deallocate(on_zero);
    allocator.deallocate(back_on_one);
  }
}

TEST(CachingAllocator, EmptyCacheReturnsEveryStreamsSegments) {
  BudgetRawAllocator raw;
  CachingAllocator allocator(raw);
  for (StreamId stream : {0, 1, 5}) allocator.deallocate(allocator.allocate(kMiB, stream));
  EXPECT_EQ(allocator.stats().segment.current, 3);
  allocator.empty_cache();
  EXPECT_EQ(allocator.stats().segment.current, 0);
  EXPECT_EQ(raw.used(), 0u);
}

TEST(CachingAllocator, DestructorReturnsCachedSegments) {
  BudgetRawAllocator raw;
  {
    CachingAllocator allocator(raw);
    allocator.deallocate(allocator.allocate(100));
    allocator.deallocate(allocator.allocate(50 * kMiB));
    EXPECT_EQ(raw.used(), 52 * kMiB);
  }
  EXPECT_EQ(raw.used(), 0u);
  EXPECT_EQ(raw.free_calls(), 2);
}

// Note [Failing the N-th allocation]: the hook tests lean on.
TEST(CachingAllocator, FailNthAllocationFailsOnceThenDisarms) {
  BudgetRawAllocator raw;
  CachingAllocator allocator(raw);
  EXPECT_EQ(allocator.allocations_until_failure(), 0);
  allocator.fail_nth_allocation(3);
  void* a = allocator.allocate(100);
  EXPECT_EQ(allocator.allocate(0), nullptr);  // a zero-size request is no allocation and does not count
  void* b = allocator.allocate(5 * kMiB);
  EXPECT_EQ(allocator.allocations_until_failure(), 1);
  const MemoryStats before = allocator.stats();
  const Error error = expect_error([&] { (void)allocator.allocate(200); });
  EXPECT_EQ(error.kind(), ErrorKind::OutOfMemory);
  EXPECT_NE(std::string(error.what()).find("failure injected by fail_nth_allocation"), std::string::npos)
      << error.what();
  MemoryStats after = allocator.stats();
  EXPECT_EQ(after.num_ooms, before.num_ooms + 1);
  EXPECT_EQ(after.allocation.current, before.allocation.current);
  EXPECT_EQ(after.allocated_bytes.current, before.allocated_bytes.current);
  EXPECT_EQ(after.num_os_allocs, before.num_os_allocs) << "an injected failure reaches no pool and no raw call";
  EXPECT_EQ(allocator.allocations_until_failure(), 0);
  void* c = allocator.allocate(200);  // disarmed: the next request works
  for (void* p : {a, b, c}) allocator.deallocate(p);

  allocator.fail_nth_allocation(1);
  allocator.fail_nth_allocation(0);  // disarmed before it fired
  allocator.deallocate(allocator.allocate(64));
  EXPECT_EQ(expect_error([&] { allocator.fail_nth_allocation(-1); }).kind(), ErrorKind::Value);
}

#ifdef KILN_ADDRESS_SANITIZER
// Note [Cached blocks are poisoned]: under ASan, the bytes of a host pool that
// no caller holds are unaddressable, so an overflow past a tensor's requested
// size, or a read of a freed block still in the cache, is a report.
TEST(CachingAllocatorDeathTest, HostPoolPoisonsWhatItDoesNotLend) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  BudgetRawAllocator raw;
  CachingAllocator allocator(raw, CachingAllocatorOptions{.host_memory = true});
  auto* p = static_cast<volatile char*>(allocator.allocate(100));
  p[0] = 1;
  p[99] = 1;
  EXPECT_DEATH(p[100] = 1, "use-after-poison");
  allocator.deallocate(const_cast<char*>(p));
  EXPECT_DEATH((void)p[0], "use-after-poison");
  auto* q = static_cast<volatile char*>(allocator.allocate(100));  // the same block, lent again
  q[99] = 2;
  allocator.deallocate(const_cast<char*>(q));
}
#endif

TEST(CpuAllocator, ProcessWideAllocatorFollowsTheEnvironment) {
  const char* env = std::getenv("KILN_NO_MEMORY_CACHING");
  const bool disabled =
      env != nullptr && !std::string_view(env).empty() && std::string_view(env) != "0";
  CachingAllocator& allocator = cpu_caching_allocator();
  EXPECT_EQ(&allocator, &cpu_caching_allocator());
  EXPECT_EQ(allocator.caching_enabled(), !disabled);
  EXPECT_STREQ(cpu_raw_allocator().name(), "cpu");

  const MemoryStats before = allocator.stats();
  for (int i = 0; i < 5; ++i) {
    void* ptr = allocator.allocate(3000);
    EXPECT_TRUE(is_aligned(ptr));
    std::memset(ptr, 0, 3000);
    allocator.deallocate(ptr);
  }
  const MemoryStats after = allocator.stats();
  EXPECT_EQ(after.allocation.allocated - before.allocation.allocated, 5);
  const int64_t os_allocs = after.num_os_allocs - before.num_os_allocs;
  if (disabled) {
    EXPECT_EQ(os_allocs, 5);
  } else {
    EXPECT_LE(os_allocs, 1) << "at most the first allocation reaches the OS";
  }
}

}  // namespace
}  // namespace kiln::memory
