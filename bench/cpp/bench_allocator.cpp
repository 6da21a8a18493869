// Microbenchmarks: alloc+free through the raw CPU allocator and the caching allocator.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>

#include "eager/memory/CachingAllocator.h"
#include "eager/memory/CpuAllocator.h"

namespace kiln::memory {
namespace {

constexpr int64_t kSmall = 256;            // bytes
constexpr int64_t kLarge = int64_t{64} << 20;  // bytes; 64 MiB, past glibc's mmap threshold

void BM_RawCpuAllocFree(benchmark::State& state) {
  const auto nbytes = static_cast<size_t>(state.range(0));
  RawAllocator& raw = cpu_raw_allocator();
  for (auto _ : state) {
    void* ptr = raw.raw_alloc(nbytes);
    benchmark::DoNotOptimize(ptr);
    raw.raw_free(ptr, nbytes);
  }
}

void run_caching(benchmark::State& state, bool caching_enabled) {
  const auto nbytes = static_cast<size_t>(state.range(0));
  CachingAllocator allocator(cpu_raw_allocator(),
                             CachingAllocatorOptions{.caching_enabled = caching_enabled});
  allocator.deallocate(allocator.allocate(nbytes));  // warm the cache
  for (auto _ : state) {
    void* ptr = allocator.allocate(nbytes);
    benchmark::DoNotOptimize(ptr);
    allocator.deallocate(ptr);
  }
  state.counters["os_allocs"] = static_cast<double>(allocator.stats().num_os_allocs);
}

void BM_CachingAllocFree(benchmark::State& state) { run_caching(state, /*caching_enabled=*/true); }

void BM_UncachedAllocFree(benchmark::State& state) {
  run_caching(state, /*caching_enabled=*/false);
}

BENCHMARK(BM_RawCpuAllocFree)->Arg(kSmall)->Arg(kLarge);
BENCHMARK(BM_CachingAllocFree)->Arg(kSmall)->Arg(kLarge);
BENCHMARK(BM_UncachedAllocFree)->Arg(kSmall)->Arg(kLarge);

}  // namespace
}  // namespace kiln::memory
