// The kernel cache's disk entries (format, checks, atomic writes) and counters.
#include "codegen/llvm/KernelCache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include <llvm/Config/llvm-config.h>
#include <llvm/Support/xxhash.h>
#include <llvm/TargetParser/Host.h>

#ifndef KILN_VERSION
#define KILN_VERSION "unknown"
#endif

namespace kiln::codegen {

namespace {

struct Counters {
  std::atomic<int64_t> memory_hits{0}, disk_hits{0}, misses{0}, disk_writes{0}, disk_rejected{0},
      disk_write_errors{0};
  std::mutex mu;  // last_rejection
  std::string last_rejection;
};

Counters& counters() {
  static Counters* c = new Counters();  // never destroyed: kernels compile during interpreter teardown
  return *c;
}

void reject(const std::string& path, const std::string& why) {
  Counters& c = counters();
  c.disk_rejected.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.last_rejection = why;
  }
  ::unlink(path.c_str());  // a concurrent writer's good entry may go too: it is recompiled, never wrong
}

template <typename T>
void put(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // little-endian hosts only (x86-64, AArch64)
  out.append(bytes, sizeof(T));
}

template <typename T>
T get(std::string_view in, size_t offset) {
  T v;
  std::memcpy(&v, in.data() + offset, sizeof(T));
  return v;
}

uint64_t checksum(std::string_view key_text, std::string_view object) {
  std::string joined;
  joined.reserve(key_text.size() + object.size());
  joined.append(key_text).append(object);
  return llvm::xxh3_64bits(llvm::StringRef(joined));
}

/// libkiln_core's GNU build-id as hex ("" when the linker wrote none).
std::string build_id_of_this_library() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&build_id_of_this_library), &info) == 0) return "";
  struct Search {
    const void* base;
    std::string id;
  } search{info.dli_fbase, ""};
  dl_iterate_phdr(
      [](dl_phdr_info* lib, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        bool ours = false;
        for (int i = 0; i < lib->dlpi_phnum && !ours; ++i) {
          const auto& ph = lib->dlpi_phdr[i];
          ours = ph.p_type == PT_LOAD && ph.p_offset == 0 &&
                 reinterpret_cast<const void*>(lib->dlpi_addr + ph.p_vaddr) == s->base;
        }
        if (!ours) return 0;
        for (int i = 0; i < lib->dlpi_phnum; ++i) {
          const auto& ph = lib->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const char* p = reinterpret_cast<const char*>(lib->dlpi_addr + ph.p_vaddr);
          const char* end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
            const char* name = p + sizeof(ElfW(Nhdr));
            const char* desc = name + ((note->n_namesz + 3) & ~3u);
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
              static const char* hex = "0123456789abcdef";
              for (uint32_t k = 0; k < note->n_descsz; ++k) {
                const auto byte = static_cast<unsigned char>(desc[k]);
                s->id += hex[byte >> 4];
                s->id += hex[byte & 15];
              }
              return 1;
            }
            p = desc + ((note->n_descsz + 3) & ~3u);
          }
        }
        return 1;
      },
      &search);
  return search.id;
}

/// A build identity of libkiln_core: its build-id, else its file's size and modification time.
const std::string& kiln_build() {
  static const std::string build = [] {
    std::string id = build_id_of_this_library();
    if (!id.empty()) return id;
    Dl_info info{};
    struct stat st{};
    if (dladdr(reinterpret_cast<void*>(&build_id_of_this_library), &info) != 0 && info.dli_fname != nullptr &&
        ::stat(info.dli_fname, &st) == 0) {
      return std::to_string(st.st_size) + "@" + std::to_string(st.st_mtime);
    }
    return std::string("unknown");
  }();
  return build;
}

bool read_file(const std::string& path, std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st{};
  bool ok = ::fstat(fd, &st) == 0;
  if (ok) {
    out.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (ok && done < out.size()) {
      const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        out.resize(done);  // shorter than fstat said: the size check rejects it
        break;
      }
      done += static_cast<size_t>(n);
    }
  }
  ::close(fd);
  return ok;
}

bool write_all(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

/// mkdir -p.
bool make_directories(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i != dir.size() && dir[i] != '/') continue;
    const std::string prefix = dir.substr(0, i);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat st{};
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

KernelCacheStats kernel_cache_stats() {
  Counters& c = counters();
  KernelCacheStats s;
  s.memory_hits = c.memory_hits.load();
  s.disk_hits = c.disk_hits.load();
  s.misses = c.misses.load();
  s.disk_writes = c.disk_writes.load();
  s.disk_rejected = c.disk_rejected.load();
  s.disk_write_errors = c.disk_write_errors.load();
  std::lock_guard<std::mutex> lock(c.mu);
  s.last_rejection = c.last_rejection;
  return s;
}

void reset_kernel_cache_stats() {
  Counters& c = counters();
  for (auto* a : {&c.memory_hits, &c.disk_hits, &c.misses, &c.disk_writes, &c.disk_rejected, &c.disk_write_errors}) {
    a->store(0);
  }
  std::lock_guard<std::mutex> lock(c.mu);
  c.last_rejection.clear();
}

void count_memory_hit() { counters().memory_hits.fetch_add(1, std::memory_order_relaxed); }
void count_miss() { counters().misses.fetch_add(1, std::memory_order_relaxed); }

std::string kernel_cache_dir() {
  if (const char* dir = std::getenv("KILN_CACHE_DIR")) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') return std::string(xdg) + "/kiln";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') return std::string(home) + "/.cache/kiln";
  return "";
}

std::string kernel_cache_environment(const std::string& cpu, const std::string& features, int lanes) {
  std::string env;
  env += "kiln " KILN_VERSION " build " + kiln_build() + "\n";
  env += "llvm " LLVM_VERSION_STRING "\n";
  env += "triple " + llvm::sys::getProcessTriple() + "\n";
  env += "cpu " + cpu + "\n";
  env += "features " + features + "\n";
  env += "lanes " + std::to_string(lanes) + "\n";
  env += "format " + std::to_string(kKernelCacheFormat) + "\n";
  return env;
}

std::string encode_kernel_cache_entry(uint64_t key, std::string_view key_text, std::string_view object) {
  std::string out;
  out.reserve(kKernelCacheHeaderBytes + key_text.size() + object.size());
  out.append(kKernelCacheMagic, sizeof kKernelCacheMagic);
  put<uint32_t>(out, kKernelCacheFormat);
  put<uint32_t>(out, kKernelCacheHeaderBytes);
  put<uint64_t>(out, key);
  put<uint64_t>(out, key_text.size());
  put<uint64_t>(out, object.size());
  put<uint64_t>(out, checksum(key_text, object));
  out.append(key_text).append(object);
  return out;
}

std::optional<std::string> decode_kernel_cache_entry(std::string_view entry, uint64_t key, std::string_view key_text,
                                                     std::string* why) {
  const auto fail = [&](const char* reason) -> std::optional<std::string> {
    if (why != nullptr) *why = reason;
    return std::nullopt;
  };
  if (entry.size() < kKernelCacheHeaderBytes) return fail("truncated: shorter than the header");
  if (std::memcmp(entry.data(), kKernelCacheMagic, sizeof kKernelCacheMagic) != 0) return fail("foreign: bad magic");
  if (get<uint32_t>(entry, 8) != kKernelCacheFormat) return fail("version: another entry format");
  if (get<uint32_t>(entry, 12) != kKernelCacheHeaderBytes) return fail("foreign: bad header size");
  if (get<uint64_t>(entry, 16) != key) return fail("foreign: another key");
  const uint64_t text_bytes = get<uint64_t>(entry, 24);
  const uint64_t object_bytes = get<uint64_t>(entry, 32);
  const uint64_t payload = entry.size() - kKernelCacheHeaderBytes;
  if (text_bytes > payload || object_bytes > payload - text_bytes) return fail("truncated: shorter than its sizes");
  if (text_bytes + object_bytes != payload) return fail("corrupt: longer than its sizes");
  const std::string_view text = entry.substr(kKernelCacheHeaderBytes, text_bytes);
  const std::string_view object = entry.substr(kKernelCacheHeaderBytes + text_bytes);
  if (get<uint64_t>(entry, 40) != checksum(text, object)) return fail("corrupt: checksum mismatch");
  if (text != key_text) return fail("foreign: another environment or kernel");
  if (object.empty()) return fail("corrupt: empty object");
  return std::string(object);
}

uint64_t KernelDiskCache::key(uint64_t kernel_hash) const { return llvm::xxh3_64bits(llvm::StringRef(key_text(kernel_hash))); }

std::string KernelDiskCache::key_text(uint64_t kernel_hash) const {
  char hash[40];
  std::snprintf(hash, sizeof hash, "kernel %016llx\n", static_cast<unsigned long long>(kernel_hash));
  return environment_ + hash;
}

std::string KernelDiskCache::entry_path(const std::string& dir, uint64_t kernel_hash) const {
  char name[40];
  std::snprintf(name, sizeof name, "/kernels/%016llx.kobj", static_cast<unsigned long long>(key(kernel_hash)));
  return dir + name;
}

std::optional<std::string> KernelDiskCache::load(uint64_t kernel_hash) const {
  const std::string dir = kernel_cache_dir();
  if (dir.empty()) return std::nullopt;
  const std::string path = entry_path(dir, kernel_hash);
  std::optional<std::string> object = load_entry(path, key(kernel_hash), key_text(kernel_hash));
  if (!object) return std::nullopt;
  counters().disk_hits.fetch_add(1, std::memory_order_relaxed);
  touch_kernel_cache_entry(path);  // used now: pruning keeps the most recently used
  return object;
}

std::optional<std::string> KernelDiskCache::load_entry(const std::string& path, uint64_t key,
                                                       const std::string& key_text) const {
  std::string bytes;
  if (!read_file(path, bytes)) return std::nullopt;
  std::string why;
  std::optional<std::string> payload = decode_kernel_cache_entry(bytes, key, key_text, &why);
  if (!payload) {
    reject(path, why + " (" + path + ")");
    return std::nullopt;
  }
  return payload;
}

void KernelDiskCache::store(uint64_t kernel_hash, std::string_view object) const {
  const std::string dir = kernel_cache_dir();
  if (dir.empty()) return;
  if (!store_entry(dir, "/kernels", entry_path(dir, kernel_hash), key(kernel_hash), key_text(kernel_hash), object)) {
    return;
  }
  counters().disk_writes.fetch_add(1, std::memory_order_relaxed);
  // A process adding entries prunes each directory it writes to once (Note [Pruning the kernel cache]).
  static std::mutex pruned_mu;
  static auto* pruned = new std::vector<std::string>();  // never destroyed: stores run during teardown
  {
    std::lock_guard<std::mutex> lock(pruned_mu);
    if (std::find(pruned->begin(), pruned->end(), dir) != pruned->end()) return;
    pruned->push_back(dir);
  }
  (void)prune(kernel_cache_max_bytes());
}

bool KernelDiskCache::store_entry(const std::string& dir, const std::string& folder, const std::string& path,
                                  uint64_t key, const std::string& key_text, std::string_view payload) const {
  Counters& c = counters();
  if (!make_directories(dir + folder)) {
    c.disk_write_errors.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  static std::atomic<uint64_t> serial{0};
  const std::string temp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial.fetch_add(1));
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    c.disk_write_errors.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const bool written = write_all(fd, encode_kernel_cache_entry(key, key_text, payload));
  const bool closed = ::close(fd) == 0;
  if (!written || !closed || ::rename(temp.c_str(), path.c_str()) != 0) {
    ::unlink(temp.c_str());
    c.disk_write_errors.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

namespace {

std::string choice_key_text(const std::string& environment, std::string_view choice_key) {
  return environment + "choice " + std::string(choice_key) + "\n";
}

std::string choice_path(const std::string& dir, uint64_t key) {
  char name[48];
  std::snprintf(name, sizeof name, "/autotune/%016llx.choice", static_cast<unsigned long long>(key));
  return dir + name;
}

}  // namespace

std::optional<std::string> KernelDiskCache::load_choice(std::string_view choice_key) const {
  const std::string dir = kernel_cache_dir();
  if (dir.empty()) return std::nullopt;
  const std::string text = choice_key_text(environment_, choice_key);
  const uint64_t k = llvm::xxh3_64bits(llvm::StringRef(text));
  return load_entry(choice_path(dir, k), k, text);
}

void KernelDiskCache::store_choice(std::string_view choice_key, std::string_view choice) const {
  const std::string dir = kernel_cache_dir();
  if (dir.empty()) return;
  const std::string text = choice_key_text(environment_, choice_key);
  const uint64_t k = llvm::xxh3_64bits(llvm::StringRef(text));
  (void)store_entry(dir, "/autotune", choice_path(dir, k), k, text, choice);
}

KernelCachePruneResult KernelDiskCache::prune(int64_t max_bytes) const {
  return prune_kernel_cache(kernel_cache_dir(), environment_, max_bytes);
}

}  // namespace kiln::codegen
