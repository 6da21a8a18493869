// TcpStore: a Store served over TCP by one process of the job (torch's TCPStore).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "eager/distributed/Store.h"

namespace kiln::distributed {

class TcpStoreServer;

/// The master (is_master, usually rank 0) serves the keys from a thread of its
/// own; every process, the master included, talks to it through one client
/// socket. Port 0 on the master picks a free port (see port()).
class TcpStore final : public Store {
 public:
  TcpStore(const std::string& host, int port, bool is_master, Milliseconds timeout);
  ~TcpStore() override;

  void set(const std::string& key, const Bytes& value) override;
  bool try_get(const std::string& key, Bytes& value) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;

  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] const std::string& host() const { return host_; }

 private:
  std::vector<Bytes> request(uint8_t command, const std::vector<Bytes>& fields);

  std::string host_;
  int port_;
  std::unique_ptr<TcpStoreServer> server_;
  std::mutex mutex_;  // one request at a time on the socket
  int socket_ = -1;
};

/// The master's server: a thread polling the listening socket and its clients.
class TcpStoreServer {
 public:
  explicit TcpStoreServer(int port);
  ~TcpStoreServer();
  [[nodiscard]] int port() const { return port_; }

 private:
  void serve();
  bool answer(int client);  // false when the client hung up

  int listener_ = -1;
  int wake_[2] = {-1, -1};  // a pipe that stops serve()
  int port_ = 0;
  std::map<std::string, Bytes> values_;
  std::thread thread_;
};

}  // namespace kiln::distributed
