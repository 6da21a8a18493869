// Streams and events; the current stream per device and thread.
#pragma once

#include <cstdint>
#include <memory>

#include "eager/cuda/DriverApi.h"

namespace kiln::cuda {

/// A stream on one device. Copyable handle; the default stream has a null handle.
/// A stream made by create_stream lives until the last Stream copy of it goes.
class Stream {
 public:
  Stream() = default;
  /// The device's default (legacy, synchronising) stream.
  static Stream default_stream(int device);
  /// A new stream (non-blocking with respect to the default stream); priority 0 is normal, -1 higher.
  static Stream create(int device, int priority = 0);

  [[nodiscard]] int device() const { return device_; }
  [[nodiscard]] CUstream handle() const { return handle_ ? handle_.get() : nullptr; }
  /// The allocator's StreamId for this stream: 0 for the default stream, else the handle's value.
  [[nodiscard]] int64_t id() const { return static_cast<int64_t>(reinterpret_cast<intptr_t>(handle())); }
  [[nodiscard]] int priority() const { return priority_; }

  void synchronize() const;
  /// True when all work queued on it has finished.
  [[nodiscard]] bool query() const;

  bool operator==(const Stream& o) const { return device_ == o.device_ && handle() == o.handle(); }

 private:
  int device_ = 0;
  int priority_ = 0;
  std::shared_ptr<CUstream_st> handle_;
};

/// The calling thread's current stream on `device` (-1: the current device);
/// the default stream until set_current_stream.
[[nodiscard]] Stream current_stream(int device = -1);
void set_current_stream(const Stream& stream);

/// A CUDA event. Created lazily on first record (as torch's); move-only.
class Event {
 public:
  explicit Event(bool enable_timing = false, bool blocking = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  /// Records the event on `stream`'s queue.
  void record(const Stream& stream);
  /// Makes `stream` wait for the work recorded before this event.
  void wait(const Stream& stream) const;
  /// True when the recorded work has finished (or nothing was recorded).
  [[nodiscard]] bool query() const;
  void synchronize() const;
  /// Milliseconds between this event and `end`, both recorded and finished.
  [[nodiscard]] float elapsed_time(const Event& end) const;
  [[nodiscard]] bool recorded() const { return event_ != nullptr; }
  [[nodiscard]] int device() const { return device_; }
  [[nodiscard]] CUevent handle() const { return event_; }

 private:
  bool enable_timing_;
  bool blocking_;
  int device_ = -1;
  CUevent event_ = nullptr;
};

}  // namespace kiln::cuda
