// The kernel cache's disk half: compiled kernels as object files under
// KILN_CACHE_DIR, one entry per kernel, keyed by the kernel IR's structural
// hash and everything else the machine code depends on; its counters. The
// in-memory half (kernel hash -> entry point) lives with the JIT
// (KernelJit.cpp). See Note [The kernel cache].
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "codegen/llvm/KernelCachePrune.h"

namespace kiln::codegen {

// Note [The kernel cache]
// -----------------------
// compile_kernels (KernelJit.h) looks each kernel up in three places, in order:
//  1. memory: a process-wide map from the kernel's structural hash to its entry
//     point, so a second compile of the same kernel (another graph, a recompile)
//     costs one map lookup;
//  2. disk: `<dir>/kernels/<key>.kobj`, an object file for this machine loaded
//     straight into the JIT (no LLVM IR, no optimisation, no code generation);
//  3. otherwise the kernel is lowered, optimised and compiled on its own module,
//     and its object file is written to the disk cache before it is loaded.
// The key is a hash of the kernel's structural hash and the environment: kiln's
// version and the build of libkiln_core (its GNU build-id, so a rebuilt kiln
// never loads code an older codegen emitted), the LLVM version, the target
// triple, CPU name and features, the vector width and the entry format. Two
// kernels are one entry when their 64-bit structural hashes are equal, as in
// the in-memory cache (Kernel::hash covers every field of the kernel IR).
//
// An entry is a fixed header, then the key text (the environment and the
// kernel's hash, compared byte for byte on load), then the object file:
//   offset  0  char[8] magic "KILNKOBJ"
//           8  u32     format version (kKernelCacheFormat)
//          12  u32     header size (48)
//          16  u64     key (the hash the file is named after)
//          24  u64     key text size
//          32  u64     object size
//          40  u64     checksum: xxh3-64 of the key text and the object
//          48  key text, then the object
// (little-endian). An entry whose magic, version, header size, key, sizes (a
// truncated or padded file), checksum or key text is not what this process
// expects is discarded (the file removed) and the kernel recompiled: it is never
// loaded. Writers write `<key>.kobj.tmp.<pid>.<n>` in the same directory and
// rename it over `<key>.kobj`, so a reader sees a whole entry or none, and two
// processes writing the same entry leave one whole entry (both are equal).
// KILN_CACHE_DIR="" turns the disk cache off; an unwritable directory only
// counts write errors. A load marks its entry used; a process's first store
// into a directory prunes it (Note [Pruning the kernel cache]).

// Note [Autotune choices on disk]
// -------------------------------
// mode="max-autotune"'s choice for a kernel at its sizes (Note [Choosing a
// kernel's schedule], runtime/KernelAutotune.h) is an entry of the same
// format under `<dir>/autotune/<key>.choice`: the key text is the
// environment, then "choice " and the choice's key (the kernel's hash, its
// layouts, the thread count), the payload the chosen schedule as text. A
// process that finds it takes the schedule without timing; a bad entry is
// discarded and the kernel timed again. Choice entries are a few hundred
// bytes and are not pruned.

inline constexpr char kKernelCacheMagic[8] = {'K', 'I', 'L', 'N', 'K', 'O', 'B', 'J'};
inline constexpr uint32_t kKernelCacheFormat = 1;       // bump when the entry layout or the key changes
inline constexpr uint32_t kKernelCacheHeaderBytes = 48;  // bytes before the key text

/// What the kernel cache did since the process started (or the last reset).
struct KernelCacheStats {
  int64_t memory_hits = 0;        ///< kernels already compiled in this process
  int64_t disk_hits = 0;          ///< kernels loaded from a disk entry
  int64_t misses = 0;             ///< kernels compiled (no usable entry)
  int64_t disk_writes = 0;        ///< entries written
  int64_t disk_rejected = 0;      ///< entries found but discarded (truncated, corrupt, foreign, other version)
  int64_t disk_write_errors = 0;  ///< entries that could not be written (unwritable directory, full disk)
  std::string last_rejection;     ///< why the last discarded entry was discarded ("" if none)
};

[[nodiscard]] KernelCacheStats kernel_cache_stats();
void reset_kernel_cache_stats();
void count_memory_hit();
void count_miss();

/// The disk cache's directory: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
/// $HOME/.cache/kiln; "" when KILN_CACHE_DIR is set empty (disk cache off) or no
/// home is known. Read on every call, so a process (a test) may change it.
[[nodiscard]] std::string kernel_cache_dir();

/// Everything besides the kernel that its machine code depends on, as text
/// (kiln version and build, LLVM version, triple, cpu, features, vector lanes).
[[nodiscard]] std::string kernel_cache_environment(const std::string& cpu, const std::string& features, int lanes);

/// An entry's bytes: header, key text, object (the layout in the Note).
[[nodiscard]] std::string encode_kernel_cache_entry(uint64_t key, std::string_view key_text, std::string_view object);

/// The object of `entry` if it is a whole, intact entry for (key, key_text);
/// otherwise nullopt and `why` says what was wrong.
[[nodiscard]] std::optional<std::string> decode_kernel_cache_entry(std::string_view entry, uint64_t key,
                                                                   std::string_view key_text, std::string* why);

/// The disk cache for one environment (one per process).
class KernelDiskCache {
 public:
  explicit KernelDiskCache(std::string environment) : environment_(std::move(environment)) {}

  /// The object file cached for the kernel with this structural hash, or
  /// nullopt: no entry, the disk cache off, or a bad entry (discarded, counted).
  [[nodiscard]] std::optional<std::string> load(uint64_t kernel_hash) const;
  /// Writes the entry (temporary file, then rename); failures are counted, never raised.
  void store(uint64_t kernel_hash, std::string_view object) const;
  /// The entry's path in `dir`, for logs and tests.
  [[nodiscard]] std::string entry_path(const std::string& dir, uint64_t kernel_hash) const;
  /// max-autotune's choice stored under `choice_key` (Note [Autotune choices on disk]), or nullopt: none, the
  /// disk cache off, or a bad entry (discarded, counted as rejected).
  [[nodiscard]] std::optional<std::string> load_choice(std::string_view choice_key) const;
  /// Writes a choice entry as store writes a kernel's; failures are counted, never raised.
  void store_choice(std::string_view choice_key, std::string_view choice) const;
  /// Prunes the current cache directory now (Note [Pruning the kernel cache], KernelCachePrune.h).
  KernelCachePruneResult prune(int64_t max_bytes) const;

 private:
  [[nodiscard]] uint64_t key(uint64_t kernel_hash) const;
  [[nodiscard]] std::string key_text(uint64_t kernel_hash) const;
  [[nodiscard]] std::optional<std::string> load_entry(const std::string& path, uint64_t key,
                                                      const std::string& key_text) const;
  /// Writes an entry (temporary file, then rename): false, counted as a write error, when it cannot.
  bool store_entry(const std::string& dir, const std::string& folder, const std::string& path, uint64_t key,
                   const std::string& key_text, std::string_view payload) const;
  std::string environment_;
};

}  // namespace kiln::codegen
