// The profiler's event buffers: one per thread, collected at stop.
// See Note [What the profiler records] (ProfilerEvents.h).
#include "eager/core/ProfilerEvents.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>

#include "eager/core/Error.h"

namespace kiln::profiler {

namespace detail {
std::atomic<bool> g_active{false};
std::atomic<bool> g_memory{false};
std::atomic<bool> g_shapes{false};
}  // namespace detail

namespace {

/// One thread's events of the current session. `session` is the session its
/// events belong to (0: none), so a thread that starts recording in a new
/// session drops what an old one left.
struct ThreadBuffer {
  std::mutex mutex;
  std::vector<Event> events;
  uint64_t session = 0;
  int64_t thread = 0;
};

struct Registry {
  std::mutex mutex;  // guards buffers, session changes and next_thread
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  int64_t next_thread = 1;
  std::atomic<uint64_t> session{0};  // the running session's id, 0 when none
};

Registry& registry() {
  static Registry* r = new Registry();  // leaked: threads may record during static destruction
  return *r;
}

thread_local std::shared_ptr<ThreadBuffer> t_buffer;

ThreadBuffer& this_thread_buffer() {
  if (!t_buffer) [[unlikely]] {
    auto buffer = std::make_shared<ThreadBuffer>();
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    buffer->thread = r.next_thread++;
    r.buffers.push_back(buffer);
    t_buffer = std::move(buffer);
  }
  return *t_buffer;
}

/// Appends `event` (stamped with this thread) to this thread's buffer for
/// `session`; returns its index, or -1 when the session is over.
int64_t append(Event&& event, uint64_t session) {
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  if (session == 0 || registry().session.load(std::memory_order_acquire) != session) return -1;
  if (b.session != session) {
    b.events.clear();
    b.session = session;
  }
  event.thread = b.thread;
  b.events.push_back(std::move(event));
  return static_cast<int64_t>(b.events.size()) - 1;
}

}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void start(Options options) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  KILN_CHECK(r.session.load() == 0, "the profiler is already running (one kiln.profiler.profile at a time)");
  static uint64_t last_session = 0;
  detail::g_memory.store(options.profile_memory);
  detail::g_shapes.store(options.record_shapes);
  r.session.store(++last_session, std::memory_order_release);
  detail::g_active.store(true, std::memory_order_release);
}

std::vector<Event> stop() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const uint64_t session = r.session.load();
  detail::g_active.store(false, std::memory_order_release);
  detail::g_memory.store(false);
  detail::g_shapes.store(false);
  r.session.store(0, std::memory_order_release);
  std::vector<Event> out;
  if (session == 0) return out;
  for (const auto& buffer : r.buffers) {
    std::lock_guard<std::mutex> buffer_lock(buffer->mutex);
    if (buffer->session == session) {
      std::move(buffer->events.begin(), buffer->events.end(), std::back_inserter(out));
    }
    buffer->events.clear();
    buffer->session = 0;
  }
  std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  return out;
}

RangeHandle begin_range(std::string name, const char* category, std::vector<ArgumentShape> shapes) {
  const uint64_t session = registry().session.load(std::memory_order_acquire);
  Event e;
  e.kind = EventKind::Range;
  e.name = std::move(name);
  e.category = category;
  e.shapes = std::move(shapes);
  e.start_ns = now_ns();
  return RangeHandle{append(std::move(e), session), session};
}

void end_range(RangeHandle handle, std::vector<std::pair<std::string, std::string>> text_args,
               std::vector<std::pair<std::string, int64_t>> int_args) {
  if (handle.index < 0) return;
  const int64_t end = now_ns();
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  if (b.session != handle.session || handle.index >= static_cast<int64_t>(b.events.size())) return;
  Event& e = b.events[static_cast<size_t>(handle.index)];
  e.end_ns = end;
  for (auto& a : text_args) e.text_args.push_back(std::move(a));
  for (auto& a : int_args) e.int_args.push_back(std::move(a));
}

void record_instant(std::string name, const char* category, std::vector<std::pair<std::string, int64_t>> int_args) {
  const uint64_t session = registry().session.load(std::memory_order_acquire);
  Event e;
  e.kind = EventKind::Instant;
  e.name = std::move(name);
  e.category = category;
  e.start_ns = e.end_ns = now_ns();
  e.int_args = std::move(int_args);
  (void)append(std::move(e), session);
}

void record_memory(const void* address, int64_t bytes, int64_t total_allocated, int64_t total_reserved,
                   int8_t device_type) {
  const uint64_t session = registry().session.load(std::memory_order_acquire);
  Event e;
  e.kind = EventKind::Memory;
  e.name = "[memory]";
  e.category = "cpu_instant_event";
  e.start_ns = e.end_ns = now_ns();
  e.bytes = bytes;
  e.total_allocated = total_allocated;
  e.total_reserved = total_reserved;
  e.address = reinterpret_cast<uint64_t>(address);
  e.device_type = device_type;
  (void)append(std::move(e), session);
}

}  // namespace kiln::profiler
