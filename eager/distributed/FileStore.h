// FileStore: a Store kept in one file that every process can open (torch's FileStore).
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "eager/distributed/Store.h"

namespace kiln::distributed {

/// Each change appends a record to the file under an exclusive flock; reading
/// replays the records (the last one of a key wins). The file counts the stores
/// open on it and the last one to close removes it, so a path can be reused by
/// the next job (as torch's FileStore does).
class FileStore final : public Store {
 public:
  FileStore(std::string path, Milliseconds timeout);
  ~FileStore() override;

  void set(const std::string& key, const Bytes& value) override;
  bool try_get(const std::string& key, Bytes& value) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  class Locked;  // the file opened and flocked, its records read
  std::string path_;
  std::mutex mutex_;  // flock is per open file, not per thread
};

}  // namespace kiln::distributed
