// Pruning the kernel cache's directory (Note [Pruning the kernel cache]).
#include "codegen/llvm/KernelCachePrune.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "codegen/llvm/KernelCache.h"

namespace kiln::codegen {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

/// Reads the first `n` bytes of `path` (fewer if the file is shorter).
std::string read_prefix(const std::string& path, size_t n) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  out.resize(n);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(fd, out.data() + done, n - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += static_cast<size_t>(got);
  }
  ::close(fd);
  out.resize(done);
  return out;
}

/// Whether the entry at `path` is of this format and its key text starts with `environment`.
bool entry_of(const std::string& path, std::string_view environment) {
  const std::string head = read_prefix(path, kKernelCacheHeaderBytes + environment.size());
  if (head.size() < kKernelCacheHeaderBytes + environment.size()) return false;
  if (std::memcmp(head.data(), kKernelCacheMagic, sizeof kKernelCacheMagic) != 0) return false;
  uint32_t format = 0, header = 0;
  uint64_t text_bytes = 0;
  std::memcpy(&format, head.data() + 8, sizeof format);
  std::memcpy(&header, head.data() + 12, sizeof header);
  std::memcpy(&text_bytes, head.data() + 24, sizeof text_bytes);
  if (format != kKernelCacheFormat || header != kKernelCacheHeaderBytes || text_bytes < environment.size()) return false;
  return std::string_view(head).substr(kKernelCacheHeaderBytes) == environment;
}

struct Entry {
  std::string path;
  int64_t bytes = 0;
  struct timespec used{};
};

}  // namespace

int64_t kernel_cache_max_bytes() {
  const char* cap = std::getenv("KILN_CACHE_MAX_BYTES");
  if (cap == nullptr || *cap == '\0') return kDefaultKernelCacheMaxBytes;
  char* end = nullptr;
  const long long v = std::strtoll(cap, &end, 10);
  return end != nullptr && *end == '\0' && v >= 0 ? static_cast<int64_t>(v) : kDefaultKernelCacheMaxBytes;
}

KernelCachePruneResult prune_kernel_cache(const std::string& dir, std::string_view environment, int64_t max_bytes) {
  KernelCachePruneResult result;
  if (dir.empty()) return result;
  const std::string folder = dir + "/kernels";
  DIR* d = ::opendir(folder.c_str());
  if (d == nullptr) return result;
  std::vector<Entry> kept;
  const time_t now = std::time(nullptr);
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = folder + "/" + std::string(name);
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (name.find(".kobj.tmp.") != std::string_view::npos) {
      if (now - st.st_mtime > kKernelCacheStaleSeconds && ::unlink(path.c_str()) == 0) ++result.removed_temporary;
      continue;
    }
    if (!ends_with(name, ".kobj") || !entry_of(path, environment)) {
      if (now - st.st_mtime > kKernelCacheStaleSeconds && ::unlink(path.c_str()) == 0) ++result.removed_foreign;
      continue;  // (a fresh one: another build using this directory now)
    }
    kept.push_back({path, static_cast<int64_t>(st.st_size), st.st_mtim});
  }
  ::closedir(d);
  int64_t total = 0;
  for (const Entry& e : kept) total += e.bytes;
  if (max_bytes > 0 && total > max_bytes) {
    std::sort(kept.begin(), kept.end(), [](const Entry& a, const Entry& b) {  // least recently used first
      return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec : a.used.tv_nsec < b.used.tv_nsec;
    });
    size_t first_kept = 0;
    while (first_kept < kept.size() && total > max_bytes) {
      const Entry& e = kept[first_kept++];
      if (::unlink(e.path.c_str()) == 0) ++result.removed_over_cap;
      total -= e.bytes;
    }
    kept.erase(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(first_kept));
  }
  result.kept = static_cast<int64_t>(kept.size());
  result.kept_bytes = total;
  return result;
}

void touch_kernel_cache_entry(const std::string& path) { ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); }

}  // namespace kiln::codegen
