// Waiting on a store by polling its try_get.
#include "eager/distributed/Store.h"

#include <algorithm>
#include <thread>

#include "eager/core/Error.h"

namespace kiln::distributed {

namespace {

using Clock = std::chrono::steady_clock;

// Polling starts fast (rendezvous keys usually arrive within a millisecond)
// and backs off to kMaxPoll so an idle wait costs little CPU.
constexpr Milliseconds kFirstPoll{1};
constexpr Milliseconds kMaxPoll{20};

std::string joined_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& key : keys) out += (out.empty() ? "'" : ", '") + key + "'";
  return out;
}

}  // namespace

Bytes Store::get(const std::string& key) {
  Bytes value;
  const auto deadline = Clock::now() + timeout_;
  Milliseconds pause = kFirstPoll;
  while (!try_get(key, value)) {
    KILN_CHECK(Clock::now() < deadline, "Store: timed out after ", timeout_.count(), " ms waiting for key '", key,
               "' (a process of the job did not reach this point: did one exit or hang?)");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, kMaxPoll);
  }
  return value;
}

void Store::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  Milliseconds pause = kFirstPoll;
  while (!check(keys)) {
    KILN_CHECK(Clock::now() < deadline, "Store: timed out after ", timeout.count(), " ms waiting for keys ",
               joined_keys(keys));
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, kMaxPoll);
  }
}

bool Store::check(const std::vector<std::string>& keys) {
  Bytes ignored;
  return std::all_of(keys.begin(), keys.end(), [&](const std::string& key) { return try_get(key, ignored); });
}

Bytes Store::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  // Not atomic here; the TCP and file stores override it with an atomic version.
  Bytes current;
  const bool present = try_get(key, current);
  if ((!present && expected.empty()) || (present && current == expected)) {
    set(key, desired);
    return desired;
  }
  return present ? current : expected;
}

}  // namespace kiln::distributed
