// The file store's record log: u32 key length, key, u32 value length, value;
// a value length of kDeleted marks a deleted key.
#include "eager/distributed/FileStore.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "eager/core/Error.h"

namespace kiln::distributed {

namespace {

constexpr uint32_t kDeleted = 0xFFFFFFFFu;
const std::string kOpenCountKey = "\x01kiln/file_store/open_count";

}  // namespace

class FileStore::Locked {
 public:
  explicit Locked(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    KILN_CHECK(fd_ >= 0, "FileStore: cannot open '", path, "': ", std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      KILN_CHECK(errno == EINTR, "FileStore: cannot lock '", path, "': ", std::strerror(errno));
    }
    read_records();
  }
  ~Locked() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

  std::map<std::string, Bytes> values;

  void append(const std::string& key, const Bytes* value) {
    Bytes record;
    auto put_u32 = [&](uint32_t v) {
      const auto* b = reinterpret_cast<const uint8_t*>(&v);
      record.insert(record.end(), b, b + 4);
    };
    put_u32(static_cast<uint32_t>(key.size()));
    record.insert(record.end(), key.begin(), key.end());
    put_u32(value ? static_cast<uint32_t>(value->size()) : kDeleted);
    if (value) record.insert(record.end(), value->begin(), value->end());
    ::lseek(fd_, 0, SEEK_END);
    const uint8_t* p = record.data();
    size_t left = record.size();
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      KILN_CHECK(n > 0, "FileStore: write failed: ", std::strerror(errno));
      p += n;
      left -= static_cast<size_t>(n);
    }
    if (value) {
      values[key] = *value;
    } else {
      values.erase(key);
    }
  }

 private:
  void read_records() {
    Bytes all;
    ::lseek(fd_, 0, SEEK_SET);
    uint8_t chunk[65536];
    while (true) {
      const ssize_t n = ::read(fd_, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      all.insert(all.end(), chunk, chunk + n);
    }
    size_t at = 0;
    auto get_u32 = [&](uint32_t& v) {
      if (at + 4 > all.size()) return false;
      std::memcpy(&v, all.data() + at, 4);
      at += 4;
      return true;
    };
    while (true) {
      uint32_t key_size = 0, value_size = 0;
      if (!get_u32(key_size) || at + key_size > all.size()) break;
      std::string key(all.begin() + static_cast<std::ptrdiff_t>(at),
                      all.begin() + static_cast<std::ptrdiff_t>(at + key_size));
      at += key_size;
      if (!get_u32(value_size)) break;
      if (value_size == kDeleted) {
        values.erase(key);
        continue;
      }
      if (at + value_size > all.size()) break;
      values[key] = Bytes(all.begin() + static_cast<std::ptrdiff_t>(at),
                          all.begin() + static_cast<std::ptrdiff_t>(at + value_size));
      at += value_size;
    }
  }

  int fd_ = -1;
};

namespace {

int64_t parse_int(const Bytes& b) {
  const std::string s(b.begin(), b.end());
  try {
    return s.empty() ? 0 : std::stoll(s);
  } catch (const std::exception&) {
    KILN_FAIL(Runtime, "Store.add: the value at the key is not an integer: '", s, "'");
  }
}

Bytes int_bytes(int64_t v) {
  const std::string s = std::to_string(v);
  return Bytes(s.begin(), s.end());
}

}  // namespace

FileStore::FileStore(std::string path, Milliseconds timeout) : Store(timeout), path_(std::move(path)) {
  (void)add(kOpenCountKey, 1);
}

FileStore::~FileStore() {
  try {
    if (add(kOpenCountKey, -1) == 0) ::unlink(path_.c_str());
  } catch (...) {
  }
}

void FileStore::set(const std::string& key, const Bytes& value) {
  std::lock_guard<std::mutex> guard(mutex_);
  Locked(path_).append(key, &value);
}

bool FileStore::try_get(const std::string& key, Bytes& value) {
  std::lock_guard<std::mutex> guard(mutex_);
  Locked file(path_);
  auto it = file.values.find(key);
  if (it == file.values.end()) return false;
  value = it->second;
  return true;
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  std::lock_guard<std::mutex> guard(mutex_);
  Locked file(path_);
  auto it = file.values.find(key);
  const int64_t sum = (it == file.values.end() ? 0 : parse_int(it->second)) + delta;
  const Bytes value = int_bytes(sum);
  file.append(key, &value);
  return sum;
}

bool FileStore::delete_key(const std::string& key) {
  std::lock_guard<std::mutex> guard(mutex_);
  Locked file(path_);
  if (file.values.count(key) == 0) return false;
  file.append(key, nullptr);
  return true;
}

int64_t FileStore::num_keys() {
  std::lock_guard<std::mutex> guard(mutex_);
  Locked file(path_);
  return static_cast<int64_t>(file.values.size()) - static_cast<int64_t>(file.values.count(kOpenCountKey));
}

Bytes FileStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  std::lock_guard<std::mutex> guard(mutex_);
  Locked file(path_);
  auto it = file.values.find(key);
  if ((it == file.values.end() && expected.empty()) || (it != file.values.end() && it->second == expected)) {
    file.append(key, &desired);
    return desired;
  }
  return it == file.values.end() ? expected : it->second;
}

}  // namespace kiln::distributed
