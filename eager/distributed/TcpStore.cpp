// The TCP store's wire protocol, server loop and client.
//
// A request is a command byte and a list of fields; a reply is a list of
// fields. A list is a u32 count then, per field, a u32 length and its bytes
// (host byte order: a job's machines share one architecture, as Gloo assumes).
#include "eager/distributed/TcpStore.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "eager/core/Error.h"

namespace kiln::distributed {

namespace {

enum Command : uint8_t { kSet = 1, kGet, kAdd, kDelete, kNumKeys, kCompareSet };

using Clock = std::chrono::steady_clock;

bool write_all(int fd, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool read_all(int fd, void* data, size_t size) {
  auto* p = static_cast<uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::recv(fd, p, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool write_fields(int fd, const std::vector<Bytes>& fields) {
  Bytes out;
  auto put_u32 = [&](uint32_t v) {
    const auto* b = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), b, b + 4);
  };
  put_u32(static_cast<uint32_t>(fields.size()));
  for (const Bytes& f : fields) {
    put_u32(static_cast<uint32_t>(f.size()));
    out.insert(out.end(), f.begin(), f.end());
  }
  return write_all(fd, out.data(), out.size());
}

bool read_fields(int fd, std::vector<Bytes>& fields) {
  uint32_t count = 0;
  if (!read_all(fd, &count, 4)) return false;
  fields.assign(count, Bytes());
  for (Bytes& f : fields) {
    uint32_t size = 0;
    if (!read_all(fd, &size, 4)) return false;
    f.resize(size);
    if (size > 0 && !read_all(fd, f.data(), size)) return false;
  }
  return true;
}

Bytes to_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string to_string(const Bytes& b) { return std::string(b.begin(), b.end()); }

int64_t parse_int(const Bytes& b) {
  const std::string s = to_string(b);
  try {
    return s.empty() ? 0 : std::stoll(s);
  } catch (const std::exception&) {
    KILN_FAIL(Runtime, "Store.add: the value at the key is not an integer: '", s, "'");
  }
}

/// A socket connected to host:port, retrying until the server listens or `timeout` passes.
int connect_with_retry(const std::string& host, int port, Milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  const auto deadline = Clock::now() + timeout;
  std::string last_error = "no address";
  while (true) {
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (rc != 0) {
      last_error = ::gai_strerror(rc);
    } else {
      for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          const int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          ::freeaddrinfo(found);
          return fd;
        }
        last_error = std::strerror(errno);
        ::close(fd);
      }
      ::freeaddrinfo(found);
    }
    KILN_CHECK(Clock::now() < deadline, "TCPStore: could not connect to ", host, ":", port, " within ",
               timeout.count(), " ms (", last_error, "); is the master process (rank 0) running?");
    std::this_thread::sleep_for(Milliseconds(10));
  }
}

}  // namespace

// --- server ------------------------------------------------------------------

TcpStoreServer::TcpStoreServer(int port) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  KILN_CHECK(listener_ >= 0, "TCPStore: socket() failed: ", std::strerror(errno));
  const int one = 1;
  ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(listener_, 128) != 0) {
    const std::string reason = std::strerror(errno);
    ::close(listener_);
    KILN_FAIL(Runtime, "TCPStore: the master could not listen on port ", port, ": ", reason,
              " (is another job using it? pick another MASTER_PORT)");
  }
  socklen_t len = sizeof(addr);
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  KILN_CHECK(::pipe2(wake_, O_CLOEXEC) == 0, "TCPStore: pipe() failed");
  thread_ = std::thread([this] { serve(); });
}

TcpStoreServer::~TcpStoreServer() {
  const char stop = 0;
  (void)!::write(wake_[1], &stop, 1);
  if (thread_.joinable()) thread_.join();
  ::close(wake_[0]);
  ::close(wake_[1]);
  ::close(listener_);
}

void TcpStoreServer::serve() {
  std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
  while (true) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) break;
    if (fds[1].revents & POLLIN) {
      const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        const int one = 1;
        ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        fds.push_back({client, POLLIN, 0});
      }
    }
    for (size_t i = 2; i < fds.size();) {
      if (fds[i].revents != 0 && !answer(fds[i].fd)) {
        ::close(fds[i].fd);
        fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      fds[i].revents = 0;
      ++i;
    }
  }
  for (size_t i = 2; i < fds.size(); ++i) ::close(fds[i].fd);
}

bool TcpStoreServer::answer(int client) {
  uint8_t command = 0;
  std::vector<Bytes> in;
  if (!read_all(client, &command, 1) || !read_fields(client, in) || in.empty()) return false;
  const std::string key = to_string(in[0]);
  std::vector<Bytes> out;
  switch (command) {
    case kSet:
      if (in.size() < 2) return false;
      values_[key] = in[1];
      break;
    case kGet: {
      auto it = values_.find(key);
      out = it == values_.end() ? std::vector<Bytes>{Bytes{0}} : std::vector<Bytes>{Bytes{1}, it->second};
      break;
    }
    case kAdd: {
      if (in.size() < 2) return false;
      auto it = values_.find(key);
      const int64_t sum = (it == values_.end() ? 0 : parse_int(it->second)) + parse_int(in[1]);
      values_[key] = to_bytes(std::to_string(sum));
      out = {values_[key]};
      break;
    }
    case kDelete:
      out = {Bytes{static_cast<uint8_t>(values_.erase(key))}};
      break;
    case kNumKeys:
      out = {to_bytes(std::to_string(values_.size()))};
      break;
    case kCompareSet: {
      if (in.size() < 3) return false;
      auto it = values_.find(key);
      if ((it == values_.end() && in[1].empty()) || (it != values_.end() && it->second == in[1])) {
        values_[key] = in[2];
        out = {in[2]};
      } else {
        out = {it == values_.end() ? in[1] : it->second};
      }
      break;
    }
    default:
      return false;
  }
  return write_fields(client, out);
}

// --- client ------------------------------------------------------------------

TcpStore::TcpStore(const std::string& host, int port, bool is_master, Milliseconds timeout)
    : Store(timeout), host_(host), port_(port) {
  if (is_master) {
    server_ = std::make_unique<TcpStoreServer>(port);
    port_ = server_->port();
  }
  socket_ = connect_with_retry(is_master ? "127.0.0.1" : host, port_, timeout);
}

TcpStore::~TcpStore() {
  if (socket_ >= 0) ::close(socket_);
  server_.reset();
}

std::vector<Bytes> TcpStore::request(uint8_t command, const std::vector<Bytes>& fields) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Bytes> reply;
  const bool ok = write_all(socket_, &command, 1) && write_fields(socket_, fields) && read_fields(socket_, reply);
  KILN_CHECK(ok, "TCPStore: lost the connection to the store at ", host_, ":", port_,
             " (did the master process, rank 0, exit?)");
  return reply;
}

void TcpStore::set(const std::string& key, const Bytes& value) { (void)request(kSet, {to_bytes(key), value}); }

bool TcpStore::try_get(const std::string& key, Bytes& value) {
  std::vector<Bytes> reply = request(kGet, {to_bytes(key)});
  if (reply.empty() || reply[0].empty() || reply[0][0] == 0) return false;
  value = std::move(reply.at(1));
  return true;
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  return parse_int(request(kAdd, {to_bytes(key), to_bytes(std::to_string(delta))}).at(0));
}

bool TcpStore::delete_key(const std::string& key) { return request(kDelete, {to_bytes(key)}).at(0).at(0) != 0; }

int64_t TcpStore::num_keys() { return parse_int(request(kNumKeys, {Bytes{}}).at(0)); }

Bytes TcpStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  return request(kCompareSet, {to_bytes(key), expected, desired}).at(0);
}

}  // namespace kiln::distributed
