// Store: the key-value store processes meet through (rendezvous), and PrefixStore.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::distributed {

using Bytes = std::vector<uint8_t>;
using Milliseconds = std::chrono::milliseconds;

/// A key-value store shared by every process of a job, as torch.distributed.Store:
/// the TCP store (one process serves it) and the file store (a file on a shared
/// disk) implement it; Gloo's rendezvous reads and writes it through GlooStore.
///
/// Required hooks: set, try_get, add, delete_key, num_keys. get and wait are
/// built on try_get by polling, bounded by the store's timeout.
class Store {
 public:
  explicit Store(Milliseconds timeout) : timeout_(timeout) {}
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  virtual void set(const std::string& key, const Bytes& value) = 0;
  /// The value of `key`, or false when it is not set yet.
  virtual bool try_get(const std::string& key, Bytes& value) = 0;
  /// Adds `delta` to the integer at `key` (0 when unset) and returns the sum.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  virtual bool delete_key(const std::string& key) = 0;
  virtual int64_t num_keys() = 0;

  /// The value of `key`, waiting for it up to the timeout.
  [[nodiscard]] Bytes get(const std::string& key);
  /// Waits until every key is set; raises when `timeout` passes first.
  void wait(const std::vector<std::string>& keys, Milliseconds timeout);
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }
  /// Whether every key is set, without waiting.
  [[nodiscard]] bool check(const std::vector<std::string>& keys);
  /// Sets `key` to `desired` if it holds `expected` (or is unset and `expected` is empty); returns the value after.
  virtual Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired);

  [[nodiscard]] Milliseconds timeout() const { return timeout_; }
  void set_timeout(Milliseconds timeout) { timeout_ = timeout; }

 private:
  Milliseconds timeout_;
};

/// Every key of `base` under "prefix/": how process groups share one store.
class PrefixStore final : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> base)
      : Store(base->timeout()), prefix_(std::move(prefix)), base_(std::move(base)) {}

  void set(const std::string& key, const Bytes& value) override { base_->set(joined(key), value); }
  bool try_get(const std::string& key, Bytes& value) override { return base_->try_get(joined(key), value); }
  int64_t add(const std::string& key, int64_t delta) override { return base_->add(joined(key), delta); }
  bool delete_key(const std::string& key) override { return base_->delete_key(joined(key)); }
  int64_t num_keys() override { return base_->num_keys(); }
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override {
    return base_->compare_set(joined(key), expected, desired);
  }
  [[nodiscard]] const std::shared_ptr<Store>& base() const { return base_; }

 private:
  [[nodiscard]] std::string joined(const std::string& key) const { return prefix_ + "/" + key; }
  std::string prefix_;
  std::shared_ptr<Store> base_;
};

}  // namespace kiln::distributed
