"""kiln.profiler: torch.profiler's shape over kiln's recorder (C++: eager/core/ProfilerEvents.h).

    with kiln.profiler.profile(activities=[kiln.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        with kiln.profiler.record_function("model"):
            model(x)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")

See README.md in this folder for what is recorded."""

from kiln.profiler._events import EventList, FunctionEvent, FunctionEventAvg
from kiln.profiler._profile import profile, record_function, tensorboard_trace_handler
from kiln.profiler._schedule import ProfilerAction, ProfilerActivity, schedule, supported_activities

__all__ = ["profile", "record_function", "schedule", "ProfilerAction", "ProfilerActivity",
           "tensorboard_trace_handler", "supported_activities", "EventList", "FunctionEvent",
           "FunctionEventAvg"]
