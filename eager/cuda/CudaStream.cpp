// Streams, events and the current-stream table.
#include "eager/cuda/CudaStream.h"

#include <unordered_map>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"

namespace kiln::cuda {

namespace {

/// The current stream per device, per thread (torch keeps it per thread too).
thread_local std::unordered_map<int, Stream> t_current_streams;

}  // namespace

Stream Stream::default_stream(int device) {
  Stream s;
  s.device_ = checked_device(device);
  return s;
}

Stream Stream::create(int device, int priority) {
  Stream s;
  s.device_ = checked_device(device);
  s.priority_ = priority;
  DeviceGuard guard(s.device_);
  CUstream raw = nullptr;
  check(driver().cuStreamCreateWithPriority(&raw, kStreamNonBlocking, priority), "cuStreamCreateWithPriority");
  s.handle_ = std::shared_ptr<CUstream_st>(raw, [](CUstream h) {
    if (driver_available()) driver().cuStreamDestroy(h);
  });
  return s;
}

void Stream::synchronize() const {
  DeviceGuard guard(device_);
  check(driver().cuStreamSynchronize(handle()), "cuStreamSynchronize");
}

bool Stream::query() const {
  DeviceGuard guard(device_);
  const CUresult r = driver().cuStreamQuery(handle());
  if (r == kCudaErrorNotReady) return false;
  check(r, "cuStreamQuery");
  return true;
}

Stream current_stream(int device) {
  device = checked_device(device);
  auto it = t_current_streams.find(device);
  return it == t_current_streams.end() ? Stream::default_stream(device) : it->second;
}

void set_current_stream(const Stream& stream) { t_current_streams[stream.device()] = stream; }

Event::Event(bool enable_timing, bool blocking) : enable_timing_(enable_timing), blocking_(blocking) {}

Event::~Event() {
  if (event_ != nullptr && driver_available()) driver().cuEventDestroy(event_);
}

void Event::record(const Stream& stream) {
  KILN_CHECK(device_ < 0 || device_ == stream.device(), "Event device ", device_,
             " does not match recording stream's device ", stream.device(), ".");
  DeviceGuard guard(stream.device());
  if (event_ == nullptr) {
    // Blocking sync (CU_EVENT_BLOCKING_SYNC = 1) when asked; timing is off unless asked.
    const unsigned flags = (enable_timing_ ? kEventDefault : kEventDisableTiming) | (blocking_ ? 0x1u : 0u);
    check(driver().cuEventCreate(&event_, flags), "cuEventCreate");
    device_ = stream.device();
  }
  check(driver().cuEventRecord(event_, stream.handle()), "cuEventRecord");
}

void Event::wait(const Stream& stream) const {
  if (event_ == nullptr) return;
  DeviceGuard guard(stream.device());
  check(driver().cuStreamWaitEvent(stream.handle(), event_, 0), "cuStreamWaitEvent");
}

bool Event::query() const {
  if (event_ == nullptr) return true;
  const CUresult r = driver().cuEventQuery(event_);
  if (r == kCudaErrorNotReady) return false;
  check(r, "cuEventQuery");
  return true;
}

void Event::synchronize() const {
  if (event_ != nullptr) check(driver().cuEventSynchronize(event_), "cuEventSynchronize");
}

float Event::elapsed_time(const Event& end) const {
  KILN_CHECK(enable_timing_ && end.enable_timing_,
             "Both events must be created with argument 'enable_timing=True'.");
  KILN_CHECK(event_ != nullptr && end.event_ != nullptr, "Both events must be recorded before calculating elapsed time.");
  float ms = 0;
  check(driver().cuEventElapsedTime(&ms, event_, end.event_), "cuEventElapsedTime");
  return ms;
}

}  // namespace kiln::cuda
