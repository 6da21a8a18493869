// The kernel cache's disk entries (codegen/llvm/KernelCache.h): a whole entry
// round-trips; a truncated, corrupt, foreign or other-version entry is refused
// with its reason; a stored entry loads back; a bad file on disk is discarded.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include <unistd.h>

#include "codegen/llvm/KernelCache.h"

using namespace kiln::codegen;

namespace {

const std::string kText = "environment\nkernel 0123\n";
const std::string kObject = std::string("\x7f" "ELF object bytes", 17);

std::optional<std::string> decode(const std::string& entry, std::string* why, uint64_t key = 42,
                                  const std::string& text = kText) {
  return decode_kernel_cache_entry(entry, key, text, why);
}

/// Points KILN_CACHE_DIR at a fresh directory for one test.
class ScopedCacheDir {
 public:
  ScopedCacheDir() {
    char pattern[] = "/tmp/kiln-kernel-cache-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    const char* old = std::getenv("KILN_CACHE_DIR");
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv("KILN_CACHE_DIR", dir_.c_str(), 1);
  }
  ~ScopedCacheDir() {
    if (had_) ::setenv("KILN_CACHE_DIR", old_.c_str(), 1);
    else ::unsetenv("KILN_CACHE_DIR");
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, old_;
  bool had_ = false;
};

}  // namespace

TEST(KernelCacheEntry, RoundTrips) {
  const std::string entry = encode_kernel_cache_entry(42, kText, kObject);
  EXPECT_EQ(entry.size(), kKernelCacheHeaderBytes + kText.size() + kObject.size());
  std::string why;
  const auto object = decode(entry, &why);
  ASSERT_TRUE(object.has_value()) << why;
  EXPECT_EQ(*object, kObject);
}

TEST(KernelCacheEntry, RefusesDamagedEntries) {
  const std::string good = encode_kernel_cache_entry(42, kText, kObject);
  struct Case {
    const char* name;
    std::string entry;
    const char* reason;
  };
  std::string flipped = good;
  flipped.back() = static_cast<char>(flipped.back() ^ 0x10);
  std::string foreign = good;
  foreign[0] = 'X';
  std::string version = good;
  version[8] = static_cast<char>(kKernelCacheFormat + 1);
  const Case cases[] = {
      {"empty", "", "truncated"},
      {"header only", good.substr(0, kKernelCacheHeaderBytes), "truncated"},
      {"truncated", good.substr(0, good.size() - 3), "truncated"},
      {"padded", good + "x", "corrupt"},
      {"flipped byte", flipped, "checksum"},
      {"bad magic", foreign, "magic"},
      {"other version", version, "version"},
  };
  for (const Case& c : cases) {
    std::string why;
    EXPECT_FALSE(decode(c.entry, &why).has_value()) << c.name;
    EXPECT_NE(why.find(c.reason), std::string::npos) << c.name << ": " << why;
  }
  std::string why;
  EXPECT_FALSE(decode(good, &why, /*key=*/43).has_value());
  EXPECT_NE(why.find("another key"), std::string::npos) << why;
  EXPECT_FALSE(decode(good, &why, 42, "other environment\nkernel 0123\n").has_value());
  EXPECT_NE(why.find("foreign"), std::string::npos) << why;
}

TEST(KernelDiskCache, StoresLoadsAndDiscardsBadFiles) {
  ScopedCacheDir scoped;
  const KernelDiskCache cache("test environment\n");
  reset_kernel_cache_stats();
  EXPECT_FALSE(cache.load(7).has_value());  // no entry: not a rejection
  cache.store(7, kObject);
  EXPECT_EQ(kernel_cache_stats().disk_writes, 1);
  const auto loaded = cache.load(7);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(*loaded, kObject);
  EXPECT_EQ(kernel_cache_stats().disk_hits, 1);
  // Another environment's cache names another file: no hit, nothing discarded.
  EXPECT_FALSE(KernelDiskCache("another environment\n").load(7).has_value());
  EXPECT_EQ(kernel_cache_stats().disk_rejected, 0);

  const std::string path = cache.entry_path(scoped.dir(), 7);
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << "garbage";
  }
  EXPECT_FALSE(cache.load(7).has_value());
  EXPECT_EQ(kernel_cache_stats().disk_rejected, 1);
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << "a bad entry is removed";
  EXPECT_NE(kernel_cache_stats().last_rejection.find("truncated"), std::string::npos);
}

TEST(KernelDiskCache, EmptyDirectoryTurnsItOff) {
  ScopedCacheDir scoped;
  ::setenv("KILN_CACHE_DIR", "", 1);
  EXPECT_EQ(kernel_cache_dir(), "");
  const KernelDiskCache cache("test environment\n");
  reset_kernel_cache_stats();
  cache.store(9, kObject);
  EXPECT_FALSE(cache.load(9).has_value());
  EXPECT_EQ(kernel_cache_stats().disk_writes, 0);
  EXPECT_EQ(kernel_cache_stats().disk_write_errors, 0);
}
