// ProfilerEvents: what kiln.profiler records while it is on (time ranges,
// instants, allocator events) and the one flag every hook reads first.
// See Note [What the profiler records].
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::profiler {

// Note [What the profiler records]
// --------------------------------
// kiln.profiler (python/kiln/profiler) turns recording on for a window; each
// layer reports what it does through this header, which sits in eager/core so
// that every layer can include it:
// - eager ops: the boxed fallback on DispatchKey::Profiler
//   (eager/dispatch/ProfilerFallback.cpp), a range per call with input shapes;
// - autograd nodes: the Engine's call_node, two nested ranges per node as
//   torch names them ("autograd::engine::evaluate_function: MulBackward0"
//   around "MulBackward0");
// - compiled graphs and each fused kernel: runtime/CompiledGraph's run;
// - JIT compiles and kernel-cache hits (memory and disk): codegen/llvm/KernelJit's
//   compile_kernels and load_or_compile;
// - allocations and frees (size, address, totals after) and OS calls:
//   eager/memory/CachingAllocator, when profile_memory is on;
// - user ranges: record_function.
// Every hook first reads is_active() (one relaxed atomic load), so a hook of
// a profiler that is off costs a predictable branch. Events go to a buffer
// per thread (its own mutex, never contended while recording); stop()
// collects them all. A range that ends after a stop or a new start (another
// session) is dropped, never written into the next session's buffer.

enum class EventKind : uint8_t { Range, Instant, Memory };

/// One tensor argument's sizes, a list argument's element sizes, or nothing
/// (a non-tensor argument), as torch's "Input Shapes" lists them.
struct ArgumentShape {
  enum class Kind : uint8_t { None, Tensor, TensorList };
  Kind kind = Kind::None;
  std::vector<std::vector<int64_t>> sizes;  // one entry for a tensor, one per element for a list
};

struct Event {
  EventKind kind = EventKind::Range;
  std::string name;
  std::string category;  // "cpu_op", "user_annotation", "autograd", "compiled_graph", "fused_kernel", "jit", ...
  int64_t start_ns = 0;  // steady clock
  int64_t end_ns = -1;   // a range that never ended stays -1
  int64_t thread = 0;    // small per-thread id, 1 for the first thread that records
  std::vector<ArgumentShape> shapes;                          // Range events of ops, with record_shapes
  std::vector<std::pair<std::string, std::string>> text_args;   // free-form details (kernel ops, ...)
  std::vector<std::pair<std::string, int64_t>> int_args;      // numbers (bytes moved, cache hits, ...)
  // Memory events: bytes > 0 an allocation, < 0 a free; totals after the event.
  int64_t bytes = 0;
  int64_t total_allocated = 0;
  int64_t total_reserved = 0;
  uint64_t address = 0;
  int8_t device_type = 0;  // kiln::DeviceType as an integer
};

struct Options {
  bool record_shapes = false;
  bool profile_memory = false;
};

namespace detail {
extern std::atomic<bool> g_active;
extern std::atomic<bool> g_memory;
extern std::atomic<bool> g_shapes;
}  // namespace detail

/// Whether a session is recording (every hook's first test).
[[nodiscard]] inline bool is_active() { return detail::g_active.load(std::memory_order_relaxed); }
/// Whether allocator events are recorded.
[[nodiscard]] inline bool records_memory() { return detail::g_memory.load(std::memory_order_relaxed); }
/// Whether op ranges carry input shapes.
[[nodiscard]] inline bool records_shapes() { return detail::g_shapes.load(std::memory_order_relaxed); }

/// Starts a session: clears every thread's buffer and turns recording on.
/// RuntimeError when one is already running. (kiln.profiler calls
/// start_profiling in eager/dispatch, which also turns the Profiler key on.)
void start(Options options);
/// Stops the session and returns every thread's events (by start time).
[[nodiscard]] std::vector<Event> stop();

/// Nanoseconds on the profiler's clock (steady).
[[nodiscard]] int64_t now_ns();

/// Opens a range on this thread; returns its handle for end_range (or -1 when
/// not recording). The returned handle stays valid only for this session.
struct RangeHandle {
  int64_t index = -1;
  uint64_t session = 0;
};
[[nodiscard]] RangeHandle begin_range(std::string name, const char* category,
                                      std::vector<ArgumentShape> shapes = {});
/// Closes the range; adds details to it. No-op for a handle of another session.
void end_range(RangeHandle handle, std::vector<std::pair<std::string, std::string>> text_args = {},
               std::vector<std::pair<std::string, int64_t>> int_args = {});
/// A point in time (a cache hit, an OS allocation).
void record_instant(std::string name, const char* category,
                    std::vector<std::pair<std::string, int64_t>> int_args = {});
/// An allocation (bytes > 0) or a free (bytes < 0) with the totals after it.
void record_memory(const void* address, int64_t bytes, int64_t total_allocated, int64_t total_reserved,
                   int8_t device_type);

/// A range for a scope: nothing happens when the profiler is off.
class RecordScope {
 public:
  RecordScope(const char* name, const char* category) {
    if (is_active()) [[unlikely]] handle_ = begin_range(name, category);
  }
  RecordScope(const std::string& name, const char* category) {
    if (is_active()) [[unlikely]] handle_ = begin_range(name, category);
  }
  ~RecordScope() {
    if (handle_.index >= 0) [[unlikely]] end_range(handle_, std::move(text_args_), std::move(int_args_));
  }
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;

  [[nodiscard]] bool recording() const { return handle_.index >= 0; }
  void add_arg(std::string key, std::string value) { text_args_.emplace_back(std::move(key), std::move(value)); }
  void add_arg(std::string key, int64_t value) { int_args_.emplace_back(std::move(key), value); }

 private:
  RangeHandle handle_;
  std::vector<std::pair<std::string, std::string>> text_args_;
  std::vector<std::pair<std::string, int64_t>> int_args_;
};

}  // namespace kiln::profiler
