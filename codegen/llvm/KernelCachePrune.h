// Pruning the kernel cache's disk entries: entries no process of this build
// can load (another kiln build or version, LLVM, CPU, entry format), stale
// temporary files, and the least recently used entries beyond a size cap.
// See Note [Pruning the kernel cache].
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::codegen {

// Note [Pruning the kernel cache]
// -------------------------------
// Every entry's key text starts with the environment it was compiled for
// (KernelCache.h: kiln version and build-id, LLVM version, triple, CPU,
// features, lanes, format), so an entry another build wrote is never loaded:
// it would only fill the disk. The first store of a process into a cache
// directory (a kernel compiled: the process is adding entries) prunes it once:
//  - an entry whose header is not this format's, or whose key text does not
//    start with this process's environment (a foreign file too), is removed
//    once it has not been written or loaded for an hour: two builds sharing a
//    directory at once (work trees, a test run beside a benchmark) do not
//    delete each other's fresh entries, an old build's go;
//  - a temporary file (`*.tmp.<pid>.<n>`) older than an hour is removed (its
//    writer died between write and rename);
//  - then, while the entries left total more than the cap (KILN_CACHE_MAX_BYTES,
//    default 1 GiB; 0 = no cap), the least recently used goes first: a load
//    refreshes its entry's modification time, so the oldest is the least used.
// A build's entries another build pruned are recompiled, never loaded wrong.
// Removing an entry a concurrent process is reading is safe: the reader holds
// the whole file (one read) or finds none and recompiles.

inline constexpr int64_t kDefaultKernelCacheMaxBytes = int64_t{1} << 30;

struct KernelCachePruneResult {
  int64_t kept = 0;               ///< entries left
  int64_t kept_bytes = 0;         ///< their total size
  int64_t removed_foreign = 0;    ///< another environment or format, or not an entry at all (unused for an hour)
  int64_t removed_over_cap = 0;   ///< least recently used beyond the cap
  int64_t removed_temporary = 0;  ///< abandoned temporary files
};

/// The cap: $KILN_CACHE_MAX_BYTES (bytes; 0 = none), else kDefaultKernelCacheMaxBytes.
[[nodiscard]] int64_t kernel_cache_max_bytes();

/// Given a cache directory (its `kernels/` folder is pruned), the environment text this process's
/// entries start with (kernel_cache_environment) and a cap in bytes (0 = none).
/// Do    prune_kernel_cache(dir, environment, max_bytes).
/// Result the entries no process of this environment loads, abandoned temporaries, and the least
///        recently used entries beyond the cap removed (Note [Pruning the kernel cache]).
KernelCachePruneResult prune_kernel_cache(const std::string& dir, std::string_view environment, int64_t max_bytes);

/// How long an abandoned temporary file or another environment's entry is kept unused (seconds).
inline constexpr int64_t kKernelCacheStaleSeconds = 3600;

/// Marks an entry used now (its modification time), so pruning by age keeps it.
void touch_kernel_cache_entry(const std::string& path);

}  // namespace kiln::codegen
