"""kiln.profiler against torch.profiler on the same program (issue 26 item 2)."""

from __future__ import annotations

import inspect
import json
import warnings

import pytest
import torch
import torch.profiler as tprof

import kiln
import kiln.profiler as kprof


def _torch_name(name: str) -> str:
    """A kiln event name as torch spells the same thing."""
    return name.replace("kiln::autograd::", "torch::autograd::").replace("kiln::", "aten::")


def _program(lib, profiler, x, w):
    with profiler.record_function("model"):
        y = (x @ w).relu().sum()
    y.backward()


def _profile(lib, profiler, **kwargs):
    x = lib.ones(4, 5, requires_grad=True)
    w = lib.ones(5, 3, requires_grad=True)
    _program(lib, profiler, x, w)  # warm: first calls initialise BLAS and the like
    with profiler.profile(activities=[profiler.ProfilerActivity.CPU], **kwargs) as prof:
        _program(lib, profiler, x, w)
    return prof


@pytest.fixture(scope="module")
def profiles():
    return (_profile(kiln, kprof, record_shapes=True, profile_memory=True),
            _profile(torch, tprof, record_shapes=True, profile_memory=True))


def _children(event, keep):
    return [_torch_name(c.name) for c in event.cpu_children if _torch_name(c.name) in keep]


def test_forward_ops_nest_under_record_function_as_torchs(profiles):
    kp, tp = profiles
    k_model = next(e for e in kp.events() if e.name == "model")
    t_model = next(e for e in tp.events() if e.name == "model")
    assert k_model.cpu_parent is None and k_model.category == "user_annotation"
    top = ["aten::matmul", "aten::relu", "aten::sum"]
    assert [_torch_name(c.name) for c in k_model.cpu_children] == top
    assert [c.name for c in t_model.cpu_children] == top
    k_matmul = k_model.cpu_children[0]
    t_matmul = t_model.cpu_children[0]
    assert _children(k_matmul, {"aten::mm"}) == _children(t_matmul, {"aten::mm"}) == ["aten::mm"]
    for k, t in zip(k_model.cpu_children, t_model.cpu_children):
        assert k.input_shapes == t.input_shapes, k.name
    # A parent's range contains its children's, and its self time excludes theirs.
    for c in k_model.cpu_children:
        assert k_model.time_range.start <= c.time_range.start <= c.time_range.end <= k_model.time_range.end
    assert k_model.self_cpu_time_total == pytest.approx(
        k_model.cpu_time_total - sum(c.cpu_time_total for c in k_model.cpu_children))


def test_autograd_nodes_are_named_and_nested_as_torchs(profiles):
    kp, tp = profiles
    prefix = "autograd::engine::evaluate_function: "

    def nodes(prof):
        out = []
        for e in prof.events():
            if e.name.startswith(prefix):
                inner = [c.name for c in e.cpu_children]
                out.append((_torch_name(e.name), [_torch_name(n) for n in inner]))
        return out

    k_nodes, t_nodes = nodes(kp), nodes(tp)
    assert [n for n, _ in k_nodes] == [n for n, _ in t_nodes]
    assert [n for n, _ in k_nodes][:3] == [prefix + "SumBackward0", prefix + "ReluBackward0",
                                           prefix + "MmBackward0"]
    for (name, inner), (_, t_inner) in zip(k_nodes, t_nodes):
        assert inner == t_inner == [name.removeprefix(prefix)]
    mm_backward = next(e for e in kp.events() if e.name == "MmBackward0")
    assert [c.name for c in mm_backward.cpu_children].count("kiln::mm") == 2


def test_key_averages_counts_match_torch(profiles):
    kp, tp = profiles
    k = {_torch_name(a.key): a for a in kp.key_averages()}
    t = {a.key: a for a in tp.key_averages()}
    for name in ["model", "aten::matmul", "aten::mm", "aten::relu", "aten::sum", "SumBackward0",
                 "ReluBackward0", "MmBackward0", "torch::autograd::AccumulateGrad"]:
        assert k[name].count == t[name].count, name
    assert k["aten::mm"].count == 3
    assert k["model"].cpu_time_total >= k["aten::matmul"].cpu_time_total > 0
    # Grouping by input shape splits mm's three calls by their shapes, as torch's does.
    k_mm = sorted(str(a.input_shapes) for a in kp.key_averages(group_by_input_shape=True) if a.key == "kiln::mm")
    t_mm = sorted(str(a.input_shapes) for a in tp.key_averages(group_by_input_shape=True) if a.key == "aten::mm")
    assert k_mm == t_mm


def test_table_layout_is_torchs(profiles):
    kp, tp = profiles
    k_lines = kp.key_averages().table(sort_by="self_cpu_time_total", row_limit=5).splitlines()
    t_lines = tp.key_averages().table(sort_by="self_cpu_time_total", row_limit=5).splitlines()
    assert len(k_lines) == len(t_lines) == 5 + 5  # rule, header, rule, 5 rows, rule, total
    assert k_lines[1].split() == t_lines[1].split()
    assert [len(line) for line in k_lines[:3]] == [len(line) for line in t_lines[:3]]
    assert k_lines[-1].startswith("Self CPU time total: ")
    by_self_time = sorted(kp.key_averages(), key=lambda a: a.self_cpu_time_total, reverse=True)
    name_width = len(k_lines[0].split(" ")[0])
    assert [row[:name_width].strip() for row in k_lines[3:8]] == [a.key if len(a.key) < 52 else a.key[:52] + "..."
                                                                for a in by_self_time[:5]]
    shaped = kp.key_averages(group_by_input_shape=True).table(row_limit=3).splitlines()
    assert shaped[1].split()[-2:] == ["Input", "Shapes"]


def test_memory_is_charged_to_the_op_that_allocates(profiles):
    kp, _ = profiles
    relu = next(e for e in kp.events() if e.name == "kiln::relu")
    assert relu.self_cpu_memory_usage >= 4 * 3 * 4  # its output (the allocator rounds up)
    model = next(e for e in kp.events() if e.name == "model")
    assert model.cpu_memory_usage == model.self_cpu_memory_usage + sum(c.cpu_memory_usage
                                                                        for c in model.cpu_children)


def test_chrome_trace_is_valid_and_complete(profiles, tmp_path):
    kp, _ = profiles
    path = tmp_path / "trace.json"
    kp.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert {"model", "kiln::matmul", "kiln::mm", "MmBackward0"} <= {e["name"] for e in complete}
    for e in complete:
        assert isinstance(e["ts"], float) and e["dur"] >= 0 and e["pid"] and e["tid"] and e["cat"]
    mm = next(e for e in complete if e["name"] == "kiln::mm")
    assert mm["args"]["Input Dims"] == [[4, 5], [5, 3]]
    matmul = next(e for e in complete if e["name"] == "kiln::matmul")
    assert matmul["ts"] <= mm["ts"] and mm["ts"] + mm["dur"] <= matmul["ts"] + matmul["dur"] + 1e-3
    counters = [e for e in events if e["ph"] == "C"]
    memory = [e for e in events if e["ph"] == "i" and e["name"] == "[memory]"]
    assert counters and len(counters) == len(memory)
    assert all(c["args"]["allocated"] >= 0 and c["args"]["reserved"] >= c["args"]["allocated"] for c in counters)
    assert {m["args"]["Bytes"] > 0 for m in memory} == {True, False}  # allocations and frees
    assert [e["ts"] for e in events if e["ph"] != "M"] == sorted(e["ts"] for e in events if e["ph"] != "M")


def test_record_function_decorator_and_nesting():
    @kprof.record_function("outer")
    def work(x):
        with kprof.record_function("inner"):
            return x + 1

    x = kiln.ones(3)
    with kprof.profile() as prof:
        work(x)
        work(x)
    outer = [e for e in prof.events() if e.name == "outer"]
    assert len(outer) == 2
    for o in outer:
        assert [c.name for c in o.cpu_children] == ["inner"]
        assert [c.name for c in o.cpu_children[0].cpu_children] == ["kiln::add"]
    assert prof.key_averages().table().count("outer") == 1


def _run_schedule(lib, profiler, **kwargs):
    traces = []

    def ready(prof):  # the step it ends at, its steps, and how many adds it saw
        names = [e.name for e in prof.events()]
        traces.append((prof.step_num, names.count("ProfilerStep*"), sum(_torch_name(n) == "aten::add"
                                                                        for n in names)))

    x = lib.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched = profiler.schedule(**kwargs)
        with profiler.profile(activities=[profiler.ProfilerActivity.CPU], schedule=sched,
                              on_trace_ready=ready) as prof:
            for _ in range(11):
                x = x + 1
                prof.step()
    return traces


@pytest.mark.parametrize("kwargs", [dict(wait=1, warmup=1, active=2, repeat=2),
                                    dict(wait=0, warmup=0, active=3),
                                    dict(wait=2, warmup=1, active=1, repeat=1, skip_first=3)])
def test_schedule_records_the_steps_torch_records(kwargs):
    assert _run_schedule(kiln, kprof, **kwargs) == _run_schedule(torch, tprof, **kwargs)


def test_schedule_actions_are_torchs():
    k = kprof.schedule(wait=1, warmup=2, active=3, repeat=2, skip_first=1)
    t = tprof.schedule(wait=1, warmup=2, active=3, repeat=2, skip_first=1)
    assert [k(i).name for i in range(20)] == [t(i).name for i in range(20)]
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        kprof.schedule(wait=0, warmup=0, active=0)


def test_nothing_is_recorded_while_off():
    x = kiln.ones(8, requires_grad=True)
    with kprof.record_function("outside"):  # a range while off: nothing, no error
        (x * 2).sum().backward()
    assert not kiln._C._profiler.is_active()
    with kprof.profile(profile_memory=True) as prof:
        pass
    assert list(prof.events()) == []
    # After a session, ops record nothing again.
    (x * 3).sum().backward()
    with kprof.profile() as prof:
        pass
    assert list(prof.events()) == []


@pytest.mark.parametrize("name", ["profile", "schedule", "record_function", "tensorboard_trace_handler",
                                  "profile.key_averages", "profile.export_chrome_trace", "profile.step"])
def test_signatures_are_torchs(name):
    def parameters(module):
        obj = module
        for part in name.split("."):
            obj = getattr(obj, part)
        return [(p.name, p.kind, p.default) for p in inspect.signature(obj).parameters.values()]

    assert parameters(kprof) == parameters(tprof)


def test_table_signature_is_torchs():
    from torch.autograd.profiler_util import EventList

    def parameters(fn):
        return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]

    assert parameters(kprof.EventList.table) == parameters(EventList.table)


def test_one_profiler_at_a_time():
    with kprof.profile():
        with pytest.raises(RuntimeError, match="already running"):
            kprof.profile().start()
    assert not kiln._C._profiler.is_active()


def test_tensorboard_trace_handler_writes_traces(tmp_path):
    x = kiln.ones(2)
    with kprof.profile(schedule=kprof.schedule(wait=0, warmup=1, active=1, repeat=2),
                       on_trace_ready=kprof.tensorboard_trace_handler(str(tmp_path), worker_name="w")) as prof:
        for _ in range(5):
            x = x * 2
            prof.step()
    files = sorted(tmp_path.glob("w.*.pt.trace.json"))
    assert len(files) == 2
    for f, step in zip(files, ["ProfilerStep#1", "ProfilerStep#3"]):
        names = {e["name"] for e in json.loads(f.read_text())["traceEvents"]}
        assert {"kiln::mul", step} <= names
