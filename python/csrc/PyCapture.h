// The escape hook of graph capture, for the Tensor methods that hand a
// tensor's values to Python (item, tolist, numpy). See PyCapture.cpp.
#pragma once

#include "capture/CaptureSession.h"

namespace kiln::python {

/// Marks the capture session of this thread (if any) broken: `what` escaped
/// to Python; the reason names the user's file:line (the first frame outside
/// the kiln package). Costs one thread-local read when nothing is capturing.
void note_escape_slow(const char* what);
inline void note_capture_escape(const char* what) {
  if (capture::current_session() != nullptr) [[unlikely]] note_escape_slow(what);
}

}  // namespace kiln::python
