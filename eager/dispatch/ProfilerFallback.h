// The Profiler dispatch key's boxed fallback, and the calls that start and
// stop a profiling session on this thread. See Note [What the profiler records]
// (eager/core/ProfilerEvents.h) and Note [The profiler key costs nothing when off].
#pragma once

#include <vector>

#include "eager/core/ProfilerEvents.h"

namespace kiln::profiler {

// Note [The profiler key costs nothing when off]
// ----------------------------------------------
// No tensor carries DispatchKey::Profiler; a session adds it to the starting
// thread's include set and removes it at stop. Until the first session the key
// resolves to a fallthrough for every op, as it always did; the first session
// registers the boxed fallback (once per process), after which the key is
// simply never in a call's key set while no session runs. Either way a call
// made while the profiler is off computes the same key set and indexes the
// same kernel as before the profiler existed: no test, no branch, no load.
// (bench/python/bench_profiler_overhead.py measures it.)

/// Starts a session (ProfilerEvents' start) and turns the Profiler key on for
/// the calling thread, registering the fallback on first use.
void start_profiling(Options options);
/// Turns the key off for the calling thread and returns the session's events.
[[nodiscard]] std::vector<Event> stop_profiling();

}  // namespace kiln::profiler
