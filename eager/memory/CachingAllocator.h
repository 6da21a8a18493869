// The device-agnostic caching allocator: a pool of blocks carved from raw segments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "eager/memory/RawAllocator.h"
#include "eager/memory/ShortLock.h"

namespace kiln::memory {

static_assert(sizeof(size_t) == 8, "the allocator's size classes assume a 64-bit size_t");

/// The stream a block is used on. 0 is the default stream; CPU always uses 0.
/// See Note [Stream-ordered reuse] in CachingAllocator.cpp.
using StreamId = int64_t;

// The size classes; the policy that uses them is at the top of CachingAllocator.cpp.
inline constexpr size_t kAlignment = 64;                  // bytes; every pointer handed out
inline constexpr size_t kMinBlockSize = 512;              // bytes; sizes are multiples of this
inline constexpr size_t kSmallSize = size_t{1} << 20;     // largest "small" request is 1 MiB
inline constexpr size_t kSmallBuffer = size_t{2} << 20;   // small-pool segments are 2 MiB
inline constexpr size_t kLargeBuffer = size_t{20} << 20;  // 20 MiB segment for 1-10 MiB requests
inline constexpr size_t kMinLargeAlloc = size_t{10} << 20;  // from 10 MiB, a segment of its own
inline constexpr size_t kRoundLarge = size_t{2} << 20;    // ...rounded up to a multiple of 2 MiB
inline constexpr size_t kMaxAllocSize = size_t{1} << 62;  // bytes; beyond: OutOfMemory, no raw call
inline constexpr size_t kQuickMaxSize = 4096;             // blocks up to this size are kept unmerged when freed
inline constexpr size_t kQuickDepth = 64;                 // ...at most this many of each size

/// One statistic, PyTorch-style.
struct Stat {
  int64_t current = 0;
  int64_t peak = 0;       ///< highest `current` since construction or reset_peak_stats()
  int64_t allocated = 0;  ///< cumulative increases
  int64_t freed = 0;      ///< cumulative decreases
};

/// A snapshot of a caching allocator's counters.
struct MemoryStats {
  Stat allocated_bytes;  ///< bytes of blocks handed to callers (rounded sizes)
  Stat reserved_bytes;   ///< bytes of segments held from the raw allocator
  Stat active_bytes;     ///< allocated bytes plus freed blocks still in use on a stream (none yet)
  Stat allocation;       ///< count of live allocations
  Stat segment;          ///< count of live raw segments
  int64_t num_os_allocs = 0;      ///< raw_alloc calls that succeeded
  int64_t num_os_frees = 0;       ///< raw_free calls
  int64_t num_alloc_retries = 0;  ///< raw_alloc failures answered by freeing the cache and retrying
  int64_t num_ooms = 0;           ///< OutOfMemory errors raised

  /// PyTorch-style flat keys: "allocated_bytes.all.current", "allocated_bytes.all.peak",
  /// "allocated_bytes.all.allocated", "allocated_bytes.all.freed", the same for
  /// reserved_bytes, active_bytes, allocation and segment; then "num_device_alloc",
  /// "num_device_free", "num_alloc_retries", "num_ooms".
  [[nodiscard]] std::vector<std::pair<std::string, int64_t>> as_flat_dict() const;
};

struct CachingAllocatorOptions {
  /// When false every allocate/deallocate is one raw call; statistics still count.
  bool caching_enabled = true;
  /// The raw allocator's memory is host memory the process may touch (CPU, not CUDA):
  /// under AddressSanitizer, cached blocks are then poisoned (Note [Cached blocks are poisoned]).
  bool host_memory = false;
};

/// A thread-safe pool of blocks over one device's RawAllocator. Freed blocks are
/// kept and reused, so a steady-state loop makes no raw calls.
class CachingAllocator {
 public:
  explicit CachingAllocator(RawAllocator& raw, CachingAllocatorOptions options = {});
  /// Releases all cached segments. Segments that still hold live allocations are
  /// left to their callers (leaked), never freed under them.
  ~CachingAllocator();

  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// 64-byte aligned memory for `nbytes` on `stream`; nbytes == 0 returns nullptr.
  /// Throws kiln::Error of kind OutOfMemory, naming the requested size and the
  /// allocated and reserved bytes, when the raw allocator fails even after the
  /// cache was freed and the raw call retried once.
  [[nodiscard]] void* allocate(size_t nbytes, StreamId stream = 0);

  /// Returns a pointer from allocate() to the pool. nullptr is a no-op; a pointer
  /// this allocator did not hand out (or already took back) is a RuntimeError.
  void deallocate(void* ptr);

  /// allocate(), also setting `*handle` to the allocation's block (nullptr when
  /// nbytes == 0), which deallocate_handle takes back without looking the pointer
  /// up: what a DataPtr's context holds for CPU storages (the owner frees it once).
  [[nodiscard]] void* allocate_with_handle(size_t nbytes, void** handle, StreamId stream = 0);
  /// deallocate() of the pointer allocate_with_handle returned with `handle`.
  void deallocate_handle(void* handle);

  /// Returns every wholly free segment to the raw allocator.
  void empty_cache();

  [[nodiscard]] MemoryStats stats() const;
  /// Sets every statistic's peak to its current value.
  void reset_peak_stats();
  [[nodiscard]] bool caching_enabled() const { return options_.caching_enabled; }

  /// The size of the block behind a live pointer: the request rounded up to a
  /// multiple of kMinBlockSize, or a little more when a cached block's remainder
  /// was too small to split off. 0 for nullptr; a RuntimeError for a foreign pointer.
  [[nodiscard]] size_t allocation_size(void* ptr) const;

  /// Fault injection for tests (Note [Failing the N-th allocation]): arms the
  /// n-th allocate() of a nonzero size from now to raise OutOfMemory, once, as
  /// if the device were full; n == 0 disarms. n < 0 is a ValueError.
  void fail_nth_allocation(int64_t n);
  /// Nonzero-size allocate() calls left until the armed failure; 0 when none is armed.
  [[nodiscard]] int64_t allocations_until_failure() const;

 private:
  struct Block;
  /// Orders free blocks by (stream, size, address): best fit on the caller's stream.
  struct BlockOrder {
    bool operator()(const Block* a, const Block* b) const;
  };
  using BlockPool = std::set<Block*, BlockOrder>;
  using LiveBlocks = std::unordered_map<void*, Block*>;
  /// Freed small blocks of one size, most recent last, each still in live_blocks_
  /// (marked as cached) for reuse (Note [Tiny blocks skip the merge]).
  using QuickList = std::vector<Block*>;

  // Helpers below run with mutex_ held.
  Block* allocate_block(size_t nbytes, StreamId stream);
  void release_live_block(Block* block);
  Block* find_free_block(BlockPool& pool, size_t size, StreamId stream);
  Block* alloc_segment(BlockPool& pool, size_t segment_size, StreamId stream);
  void split_block(Block* block, size_t size);
  void free_block(Block* block);
  void release_cached_segments();
  Block* take_quick_block(size_t size, StreamId stream);
  bool keep_quick_block(Block* block);
  void drain_quick_blocks();
  [[noreturn]] void throw_out_of_memory(size_t nbytes, const char* cause = "");

  RawAllocator& raw_;
  const CachingAllocatorOptions options_;
  mutable ShortLock mutex_;  // Note [The allocator's lock]
  BlockPool small_blocks_;  // free blocks of small (2 MiB) segments
  BlockPool large_blocks_;  // free blocks of large segments
  LiveBlocks live_blocks_;  // handed out, by pointer
  QuickList quick_[kQuickMaxSize / kMinBlockSize];  // by size / kMinBlockSize - 1
  MemoryStats stats_;
  int64_t fail_countdown_ = 0;  // Note [Failing the N-th allocation]
};

}  // namespace kiln::memory
