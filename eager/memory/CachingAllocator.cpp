// The caching allocator's policy: size classes, best-fit reuse, splitting, merging, statistics.
#include "eager/memory/CachingAllocator.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iterator>
#include <mutex>
#include <string>

#include "eager/core/Device.h"
#include "eager/core/Error.h"
#include "eager/core/ProfilerEvents.h"
#include "eager/memory/AddressSanitizer.h"

// Policy. The allocator is device-agnostic: a RawAllocator supplies segments
// (malloc on CPU, cudaMalloc on CUDA) and this file carves them into blocks.
//
// - Every request is rounded up to a multiple of kMinBlockSize (512 bytes).
//   allocated_bytes counts block sizes, never the caller's exact request.
//   nbytes == 0 returns nullptr.
// - Every pointer is 64-byte aligned (kAlignment): segments arrive 64-byte
//   aligned from the raw allocator and every block starts a multiple of
//   512 bytes into its segment.
// - Requests of at most kSmallSize (1 MiB) are small: they come from the small
//   pool, whose segments are kSmallBuffer (2 MiB). Larger requests come from the
//   large pool, whose segments are kLargeBuffer (20 MiB) for requests below
//   kMinLargeAlloc (10 MiB) and the request rounded up to a multiple of
//   kRoundLarge (2 MiB) from there on. The pools never share blocks, so many
//   small tensors cannot fragment the big segments.
// - A request takes the smallest free block of its pool and stream that fits
//   (best fit). Free blocks sit in a set ordered by (stream, size, address), so
//   the lookup is one lower_bound.
// - A block larger than the request is split when the remainder is worth
//   keeping: at least kMinBlockSize in the small pool, more than kSmallSize in
//   the large pool (only requests above 1 MiB look there). Otherwise the caller
//   gets the whole block, and the slack counts as allocated.
// - A freed block merges with the free neighbours of its segment, so a segment
//   whose blocks are all free is one block again. Blocks of at most
//   kQuickMaxSize (4 KiB) wait unmerged on a quick list of their size first
//   (Note [Tiny blocks skip the merge]).
// - Freed blocks stay cached and are reused: a steady-state loop makes no raw
//   calls. empty_cache() returns every wholly free segment; so does the
//   destructor.
// - When raw_alloc fails, every wholly free cached segment is returned and the
//   call retried once; if it fails again the request raises OutOfMemory naming
//   the size and the allocated and reserved bytes, and the allocator stays
//   usable.
// - Blocks carry the stream they were allocated on and are reused only on that
//   stream. See Note [Stream-ordered reuse].
// - One lock (ShortLock, Note [The allocator's lock]) guards everything, raw calls included; in steady state there are
//   none, so the lock is held for a set lookup and a hash-map update.
// - With caching disabled, allocate is one raw_alloc of exactly nbytes and
//   deallocate one raw_free, so ASan and valgrind see each buffer's true
//   bounds. Statistics still count, with the same rounded sizes as when caching
//   is on (reserved_bytes then equals allocated_bytes).

// Note [Stream-ordered reuse]
// ---------------------------
// A device with asynchronous streams (CUDA) may still be running kernels that
// use a block after the host has called deallocate. Handing that block to new
// work on the same stream is safe, because a stream runs its work in order;
// handing it to another stream is not. So a segment belongs to the stream that
// first asked for it, every block carved from it inherits that stream, and the
// free sets are ordered by stream first, so find_free_block sees only the
// caller's stream. Neighbours in a segment share its stream, so merging never
// mixes streams. CPU uses stream 0 throughout and pays nothing for this.
//
// The CUDA backend reuses this pool unchanged with its own RawAllocator and its
// stream ids. What it adds (a later issue) is record_stream: a tensor used on
// streams other than its allocation stream. Then deallocate must not call
// free_block at once: it records an event on each of those streams and parks
// the block (still counted in active_bytes, neither allocated nor free) until
// the events complete; a process_events() step at the top of allocate, and
// before release_cached_segments, then calls free_block. The spot is marked in
// deallocate() below.

// Note [Failing the N-th allocation]
// ----------------------------------
// Tests need every allocation of an op to fail in turn, to show that kiln's
// out-of-memory path leaks nothing, leaves no tensor half-written and keeps
// the allocator usable (tests/python/runtime/test_allocation_faults.py). So
// fail_nth_allocation(n) arms a countdown that allocate() decrements for each
// nonzero request; the request that takes it to zero raises the same
// OutOfMemory a full device raises (counted in num_ooms; the message says the
// failure was injected), before touching any pool, and disarms it. Off, the
// cost is one test of a member already in cache under the lock allocate()
// takes anyway: a branch that always goes the same way.
//
// Note [Cached blocks are poisoned]
// ---------------------------------
// A caching allocator hides buffer overflows from AddressSanitizer: the bytes
// past a tensor's end belong to the same malloc'd segment, so reading them is
// legal as far as ASan knows. In an ASan build (eager/memory/AddressSanitizer.h)
// a host-memory pool therefore poisons every byte it is not lending out: a new
// segment whole, a freed block whole (before it merges), and allocate()
// unpoisons exactly the caller's nbytes, not the rounded block. An access past
// a tensor's storage, or to a freed tensor's cached block, is then an ASan
// report even with caching on. Segments are unpoisoned before they go back to
// the raw allocator. Device pools (CUDA) hold no host memory and poison nothing.

// Note [Tiny blocks skip the merge]
// ---------------------------------
// Eager code allocates and frees many tiny buffers (a 1-element op's result,
// a 0-dim scalar): each would take a 512-byte block split off a free
// remainder (a set lookup, a new Block, a set insert) and on free merge it
// back (two set erases, a delete, an insert), plus a hash-map node each way:
// about a third of a 1-element add's time from Python. So a freed block of at
// most kQuickMaxSize bytes is not merged: it goes onto the quick list of its
// size (at most kQuickDepth deep), still marked allocated so its neighbours do
// not merge into it, and stays in live_blocks_ marked `cached` (so the next
// allocate needs no hash-map insert, and deallocate no erase); a cached block
// counts as freed everywhere else (deallocate and allocation_size refuse its
// pointer as before). The next request of that size and stream takes the most
// recent one back (reuse is LIFO, as a freed block that merges is also the
// first fit). Statistics count it freed as before. Anything that returns
// segments (empty_cache, the OOM retry, the destructor) first frees the quick
// lists' blocks the ordinary way (out of live_blocks_, merged), so a segment
// of free blocks is still one block again, and still returned.

namespace kiln::memory {

/// A contiguous piece of one segment, either handed out or free in its pool.
struct CachingAllocator::Block {
  void* ptr;
  size_t size;              // bytes
  StreamId stream;          // see Note [Stream-ordered reuse]
  BlockPool* pool;          // the free set it returns to; nullptr when caching is disabled
  size_t requested = 0;     // bytes the caller asked for while allocated
  Block* prev = nullptr;    // neighbours in the same segment, by address
  Block* next = nullptr;
  bool allocated = false;
  bool cached = false;      // on a quick list (still in live_blocks_): Note [Tiny blocks skip the merge]

  [[nodiscard]] bool is_whole_segment() const { return prev == nullptr && next == nullptr; }
};

bool CachingAllocator::BlockOrder::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  if (a->size != b->size) return a->size < b->size;
  return std::less<void*>()(a->ptr, b->ptr);
}

namespace {

[[nodiscard]] size_t round_size(size_t nbytes) {
  return (nbytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

/// The segment a pool-missing request of `size` (already rounded) asks for.
[[nodiscard]] size_t segment_size(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

void update(Stat& stat, int64_t delta) {
  stat.current += delta;
  if (delta >= 0) {
    stat.allocated += delta;
    stat.peak = std::max(stat.peak, stat.current);
    return;
  }
  stat.freed -= delta;
}

void reset_peak(Stat& stat) { stat.peak = stat.current; }

/// "40.00 MiB", for messages.
[[nodiscard]] std::string format_bytes(size_t nbytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(nbytes);
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return std::to_string(nbytes) + " bytes";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f %s", value, kUnits[unit]);
  return buf;
}

[[nodiscard]] int64_t as_signed(size_t nbytes) { return static_cast<int64_t>(nbytes); }

}  // namespace

std::vector<std::pair<std::string, int64_t>> MemoryStats::as_flat_dict() const {
  std::vector<std::pair<std::string, int64_t>> out;
  out.reserve(24);
  auto add = [&out](const std::string& name, const Stat& stat) {
    out.emplace_back(name + ".all.current", stat.current);
    out.emplace_back(name + ".all.peak", stat.peak);
    out.emplace_back(name + ".all.allocated", stat.allocated);
    out.emplace_back(name + ".all.freed", stat.freed);
  };
  add("allocated_bytes", allocated_bytes);
  add("reserved_bytes", reserved_bytes);
  add("active_bytes", active_bytes);
  add("allocation", allocation);
  add("segment", segment);
  out.emplace_back("num_device_alloc", num_os_allocs);
  out.emplace_back("num_device_free", num_os_frees);
  out.emplace_back("num_alloc_retries", num_alloc_retries);
  out.emplace_back("num_ooms", num_ooms);
  return out;
}

namespace {

/// kiln.profiler's allocator event (Note [What the profiler records]): `bytes`
/// > 0 an allocation, < 0 a free, with the totals after it.
void report_to_profiler(const RawAllocator& raw, const void* ptr, int64_t bytes, const MemoryStats& stats) {
  if (!profiler::records_memory()) return;
  const std::string_view device = raw.name();
  const auto type = device.starts_with("cuda") ? DeviceType::CUDA : DeviceType::CPU;
  profiler::record_memory(ptr, bytes, stats.allocated_bytes.current, stats.reserved_bytes.current,
                          static_cast<int8_t>(type));
}

/// The profiler's instant for a raw (OS or driver) call.
void report_os_call(const char* what, size_t bytes) {
  if (!profiler::records_memory()) return;
  profiler::record_instant(what, "memory", {{"Bytes", static_cast<int64_t>(bytes)}});
}

}  // namespace

CachingAllocator::CachingAllocator(RawAllocator& raw, CachingAllocatorOptions options)
    : raw_(raw), options_(options) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<ShortLock> guard(mutex_);
  release_cached_segments();
  // What is left belongs to segments with live allocations: keep their memory
  // (callers still point into it) but drop the bookkeeping.
  for (BlockPool* pool : {&small_blocks_, &large_blocks_}) {
    for (Block* block : *pool) delete block;
  }
  for (auto& [ptr, block] : live_blocks_) delete block;
}

void* CachingAllocator::allocate(size_t nbytes, StreamId stream) {
  if (nbytes == 0) return nullptr;
  std::lock_guard<ShortLock> guard(mutex_);
  return allocate_block(nbytes, stream)->ptr;
}

void* CachingAllocator::allocate_with_handle(size_t nbytes, void** handle, StreamId stream) {
  *handle = nullptr;
  if (nbytes == 0) return nullptr;
  std::lock_guard<ShortLock> guard(mutex_);
  Block* block = allocate_block(nbytes, stream);
  *handle = block;
  return block->ptr;
}

/// A live block of at least `nbytes` (> 0) bytes on `stream`, counted and in live_blocks_.
CachingAllocator::Block* CachingAllocator::allocate_block(size_t nbytes, StreamId stream) {
  if (fail_countdown_ != 0 && --fail_countdown_ == 0) [[unlikely]] {
    throw_out_of_memory(nbytes, " (failure injected by fail_nth_allocation)");
  }
  if (nbytes > kMaxAllocSize) throw_out_of_memory(nbytes);
  const size_t size = round_size(nbytes);

  Block* block = nullptr;
  bool listed = false;  // taken from a quick list, so already in live_blocks_
  if (options_.caching_enabled && size <= kQuickMaxSize) {
    block = take_quick_block(size, stream);
    listed = block != nullptr;
  }
  if (listed) {
    if (options_.host_memory) asan_unpoison(block->ptr, nbytes);
  } else if (!options_.caching_enabled) {
    void* ptr = raw_.raw_alloc(nbytes);
    if (ptr == nullptr) throw_out_of_memory(nbytes);
    report_os_call("[OS alloc]", size);
    ++stats_.num_os_allocs;
    update(stats_.segment, 1);
    update(stats_.reserved_bytes, as_signed(size));
    block = new Block{ptr, size, stream, nullptr};
  } else {
    BlockPool& pool = size <= kSmallSize ? small_blocks_ : large_blocks_;
    block = find_free_block(pool, size, stream);
    if (block == nullptr) block = alloc_segment(pool, segment_size(size), stream);
    if (block == nullptr) {
      release_cached_segments();
      ++stats_.num_alloc_retries;
      block = alloc_segment(pool, segment_size(size), stream);
    }
    if (block == nullptr) throw_out_of_memory(nbytes);
    split_block(block, size);
    if (options_.host_memory) asan_unpoison(block->ptr, nbytes);
  }

  block->allocated = true;
  block->requested = nbytes;
  if (!listed) live_blocks_.emplace(block->ptr, block);
  update(stats_.allocation, 1);
  update(stats_.allocated_bytes, as_signed(block->size));
  update(stats_.active_bytes, as_signed(block->size));
  report_to_profiler(raw_, block->ptr, as_signed(block->size), stats_);
  return block;
}

void CachingAllocator::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<ShortLock> guard(mutex_);
  auto it = live_blocks_.find(ptr);
  KILN_CHECK(it != live_blocks_.end() && !it->second->cached, "caching allocator (", raw_.name(),
             "): cannot free pointer ", ptr, ", which it did not allocate or has already freed");
  release_live_block(it->second);
}

void CachingAllocator::deallocate_handle(void* handle) {
  if (handle == nullptr) return;
  std::lock_guard<ShortLock> guard(mutex_);
  auto* block = static_cast<Block*>(handle);
  KILN_INTERNAL_ASSERT(block->allocated && !block->cached, "caching allocator (", raw_.name(),
                       "): a block handle freed twice");
  release_live_block(block);
}

/// Takes a handed-out block (in live_blocks_) back: counted freed, then kept on
/// a quick list, or out of live_blocks_ and merged into its pool (or freed raw).
void CachingAllocator::release_live_block(Block* block) {
  update(stats_.allocation, -1);
  update(stats_.allocated_bytes, -as_signed(block->size));
  update(stats_.active_bytes, -as_signed(block->size));
  report_to_profiler(raw_, block->ptr, -as_signed(block->size), stats_);

  if (!options_.caching_enabled) {
    live_blocks_.erase(block->ptr);
    raw_.raw_free(block->ptr, block->requested);
    report_os_call("[OS free]", block->size);
    ++stats_.num_os_frees;
    update(stats_.segment, -1);
    update(stats_.reserved_bytes, -as_signed(block->size));
    delete block;
    return;
  }
  // Hook [record_stream]: a block used on other streams is parked here behind
  // events instead of freed. See Note [Stream-ordered reuse].
  if (options_.host_memory) asan_poison(block->ptr, block->size);
  if (block->size <= kQuickMaxSize && keep_quick_block(block)) return;
  live_blocks_.erase(block->ptr);
  free_block(block);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<ShortLock> guard(mutex_);
  release_cached_segments();
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<ShortLock> guard(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<ShortLock> guard(mutex_);
  for (Stat* stat : {&stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes,
                     &stats_.allocation, &stats_.segment}) {
    reset_peak(*stat);
  }
}

size_t CachingAllocator::allocation_size(void* ptr) const {
  if (ptr == nullptr) return 0;
  std::lock_guard<ShortLock> guard(mutex_);
  auto it = live_blocks_.find(ptr);
  KILN_CHECK(it != live_blocks_.end() && !it->second->cached, "caching allocator (", raw_.name(), "): pointer ", ptr,
             " is not a live allocation");
  return it->second->size;
}

void CachingAllocator::fail_nth_allocation(int64_t n) {
  KILN_CHECK_VALUE(n >= 0, "fail_nth_allocation: n must be >= 0 (0 disarms), got ", n);
  std::lock_guard<ShortLock> guard(mutex_);
  fail_countdown_ = n;
}

int64_t CachingAllocator::allocations_until_failure() const {
  std::lock_guard<ShortLock> guard(mutex_);
  return fail_countdown_;
}

/// Takes the smallest free block of `pool` on `stream` with at least `size`
/// bytes out of the pool, or returns nullptr.
CachingAllocator::Block* CachingAllocator::find_free_block(BlockPool& pool, size_t size,
                                                          StreamId stream) {
  Block key{nullptr, size, stream, &pool};
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* block = *it;
  pool.erase(it);
  return block;
}

/// A new segment from the raw allocator as one block outside any free set, or
/// nullptr when the raw allocator has no memory.
CachingAllocator::Block* CachingAllocator::alloc_segment(BlockPool& pool, size_t segment_size,
                                                        StreamId stream) {
  void* ptr = raw_.raw_alloc(segment_size);
  if (ptr == nullptr) return nullptr;
  KILN_INTERNAL_ASSERT(reinterpret_cast<uintptr_t>(ptr) % kAlignment == 0, raw_.name(),
                       " raw allocator returned a pointer that is not ", kAlignment,
                       "-byte aligned");
  report_os_call("[OS alloc]", segment_size);
  ++stats_.num_os_allocs;
  update(stats_.segment, 1);
  update(stats_.reserved_bytes, as_signed(segment_size));
  if (options_.host_memory) asan_poison(ptr, segment_size);
  return new Block{ptr, segment_size, stream, &pool};
}

/// Shrinks `block` (outside its free set) to `size` bytes when the remainder is
/// worth keeping, and puts the remainder in the free set.
void CachingAllocator::split_block(Block* block, size_t size) {
  const size_t remaining = block->size - size;
  const bool small = block->pool == &small_blocks_;
  if (small ? remaining < kMinBlockSize : remaining <= kSmallSize) return;
  auto* rest = new Block{static_cast<char*>(block->ptr) + size, remaining, block->stream,
                         block->pool};
  rest->prev = block;
  rest->next = block->next;
  if (rest->next != nullptr) rest->next->prev = rest;
  block->next = rest;
  block->size = size;
  block->pool->insert(rest);
}

/// Puts a no-longer-used block back in its free set, merged with free neighbours.
void CachingAllocator::free_block(Block* block) {
  block->allocated = false;
  block->requested = 0;
  BlockPool& pool = *block->pool;
  // A neighbour that is not allocated is in the free set. (Once blocks can be
  // parked behind stream events, "parked" becomes a third state to skip here.)
  if (Block* prev = block->prev; prev != nullptr && !prev->allocated) {
    pool.erase(prev);
    block->ptr = prev->ptr;
    block->size += prev->size;
    block->prev = prev->prev;
    if (block->prev != nullptr) block->prev->next = block;
    delete prev;
  }
  if (Block* next = block->next; next != nullptr && !next->allocated) {
    pool.erase(next);
    block->size += next->size;
    block->next = next->next;
    if (block->next != nullptr) block->next->prev = block;
    delete next;
  }
  pool.insert(block);
}

/// The most recently freed block of `size` bytes (a multiple of kMinBlockSize,
/// at most kQuickMaxSize) on `stream`, live again; nullptr when none.
CachingAllocator::Block* CachingAllocator::take_quick_block(size_t size, StreamId stream) {
  QuickList& list = quick_[size / kMinBlockSize - 1];
  if (list.empty() || list.back()->stream != stream) return nullptr;
  Block* block = list.back();
  list.pop_back();
  block->cached = false;
  return block;
}

/// Keeps a freed small block (still in live_blocks_) on its quick list,
/// unmerged and marked cached; false when that list is full.
bool CachingAllocator::keep_quick_block(Block* block) {
  QuickList& list = quick_[block->size / kMinBlockSize - 1];
  if (list.size() >= kQuickDepth) return false;
  if (list.capacity() == 0) list.reserve(kQuickDepth);
  block->cached = true;
  list.push_back(block);
  return true;
}

/// Frees every quick-listed block into its pool, merging it with its neighbours.
void CachingAllocator::drain_quick_blocks() {
  for (QuickList& list : quick_) {
    for (Block* block : list) {
      live_blocks_.erase(block->ptr);
      block->cached = false;
      free_block(block);
    }
    list.clear();
  }
}

/// Returns every wholly free segment, on every stream, to the raw allocator.
void CachingAllocator::release_cached_segments() {
  drain_quick_blocks();
  for (BlockPool* pool : {&small_blocks_, &large_blocks_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* block = *it;
      if (!block->is_whole_segment()) {
        ++it;
        continue;
      }
      it = pool->erase(it);
      if (options_.host_memory) asan_unpoison(block->ptr, block->size);
      raw_.raw_free(block->ptr, block->size);
      report_os_call("[OS free]", block->size);
      ++stats_.num_os_frees;
      update(stats_.segment, -1);
      update(stats_.reserved_bytes, -as_signed(block->size));
      delete block;
    }
  }
}

void CachingAllocator::throw_out_of_memory(size_t nbytes, const char* cause) {
  ++stats_.num_ooms;
  KILN_FAIL(OutOfMemory, raw_.name(), " out of memory: tried to allocate ", format_bytes(nbytes),
            " (", nbytes, " bytes); kiln's caching allocator has ",
            format_bytes(static_cast<size_t>(stats_.allocated_bytes.current)), " allocated and ",
            format_bytes(static_cast<size_t>(stats_.reserved_bytes.current)), " reserved",
            options_.caching_enabled ? "" : " (caching disabled)", cause);
}

}  // namespace kiln::memory
