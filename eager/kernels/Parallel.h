// Intra-op parallelism on oneTBB's thread pool (idle workers sleep, so kiln
// and torch in one process do not fight; DESIGN.md decision 9).
//
// kiln.set_num_threads(n) / kiln.get_num_threads() control the pool; the
// default is every core. Results never depend on the thread count: work is
// split by size alone (see parallel_reduce), never by how many threads exist.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace kiln {

[[nodiscard]] int get_num_threads();
/// RuntimeError for n < 1.
void set_num_threads(int n);
/// True inside a parallel_for body (nested calls then run inline).
[[nodiscard]] bool in_parallel_region();

/// Elements below which a pointwise loop is not worth splitting.
inline constexpr int64_t kGrainSize = 32768;

namespace detail {
void parallel_for_impl(int64_t begin, int64_t end, int64_t grain_size,
                       const std::function<void(int64_t, int64_t)>& f);
void parallel_for_each_impl(int64_t begin, int64_t end, const std::function<void(int64_t)>& f);
}

/// Runs f(chunk_begin, chunk_end) over [begin, end), in parallel when the range
/// holds more than grain_size elements and more than one thread is allowed.
template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain_size, const F& f) {
  if (begin >= end) return;
  if (end - begin <= grain_size || get_num_threads() == 1 || in_parallel_region()) {
    f(begin, end);
    return;
  }
  detail::parallel_for_impl(begin, end, grain_size, f);
}

/// Runs f(i) for every i in [begin, end), each i its own task: threads take
/// the next one as they free up, so a thread that joins late takes fewer.
/// For a few large, equal pieces of work (GEMM panels), where parallel_for's
/// one chunk per thread would leave a late thread's chunk waiting for it.
template <typename F>
void parallel_for_each(int64_t begin, int64_t end, const F& f) {
  if (begin >= end) return;
  if (end - begin == 1 || get_num_threads() == 1 || in_parallel_region()) {
    for (int64_t i = begin; i < end; ++i) f(i);
    return;
  }
  detail::parallel_for_each_impl(begin, end, f);
}

/// Chunks of a parallel_reduce one task takes at a time.
inline constexpr int64_t kReduceChunksPerTask = 4;

/// Deterministic parallel reduction: [begin, end) is cut into chunks of
/// `chunk` elements (by size only), each reduced by f(b, e) -> T, and the
/// partial results combined left to right with combine(T, T) -> T. Threads
/// take tasks of kReduceChunksPerTask chunks as they free up (parallel_for_each),
/// so a thread that wakes late, or shares its core, holds up no fixed half of
/// the work (a static split left a 64 MiB sum waiting on the slower thread);
/// which thread reduces a chunk never changes the result.
template <typename T, typename F, typename Combine>
T parallel_reduce(int64_t begin, int64_t end, int64_t chunk, T identity, const F& f, const Combine& combine) {
  if (begin >= end) return identity;
  const int64_t n_chunks = (end - begin + chunk - 1) / chunk;
  if (n_chunks == 1) return combine(identity, f(begin, end));
  std::vector<T> partial(static_cast<size_t>(n_chunks), identity);
  const auto reduce_chunks = [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      const int64_t b = begin + c * chunk;
      partial[static_cast<size_t>(c)] = f(b, std::min(end, b + chunk));
    }
  };
  const int64_t n_tasks = (n_chunks + kReduceChunksPerTask - 1) / kReduceChunksPerTask;
  parallel_for_each(0, n_tasks, [&](int64_t task) {
    reduce_chunks(task * kReduceChunksPerTask, std::min(n_chunks, (task + 1) * kReduceChunksPerTask));
  });
  T acc = identity;
  for (const T& p : partial) acc = combine(acc, p);
  return acc;
}

}  // namespace kiln
