"""python -m kiln.distributed.run: torchrun's environment for each worker, two simulated
nodes of two processes on loopback (--nnodes/--node-rank/--master-addr/--master-port),
a failing worker stopping the job with its rank and error named, and signals forwarded."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest

from distributed_ranks import free_port
from kiln.distributed import run

LAUNCH = [sys.executable, "-m", "kiln.distributed.run"]

WORKER = textwrap.dedent("""
    import json, os, sys
    from datetime import timedelta
    import kiln
    from kiln.distributed import destroy_process_group, init_process_group
    import kiln.distributed as dist

    init_process_group(timeout=timedelta(seconds=30))
    total = kiln.ones(1) * dist.get_rank()
    dist.all_reduce(total)
    if sys.argv[1:] == ["fail"] and dist.get_rank() == 1:
        raise ValueError("rank 1 breaks on purpose")
    names = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT"]
    # One write per line: the launcher runs workers with -u, where print writes the text and the
    # newline separately, so two workers' lines could interleave on the shared pipe.
    sys.stdout.write(json.dumps({**{n: os.environ[n] for n in names}, "sum": total.item(), "args": sys.argv[1:]}) + "\\n")
    dist.barrier()
    destroy_process_group()
""")


@pytest.fixture
def worker_script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(WORKER)
    return str(path)


def test_two_nodes_of_two_processes(worker_script):
    port = free_port()
    common = ["--nnodes", "2", "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", str(port)]
    nodes = [subprocess.Popen(LAUNCH + common + ["--node-rank", str(n), worker_script, "--lr", "0.1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(2)]
    outputs = [node.communicate(timeout=120) for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], [err for _, err in outputs]
    seen = sorted((json.loads(line) for out, _ in outputs for line in out.splitlines()), key=lambda e: e["RANK"])
    assert [(e["RANK"], e["LOCAL_RANK"], e["GROUP_RANK"]) for e in seen] == [
        ("0", "0", "0"), ("1", "1", "0"), ("2", "0", "1"), ("3", "1", "1")]
    for e in seen:
        assert (e["WORLD_SIZE"], e["LOCAL_WORLD_SIZE"], e["MASTER_PORT"]) == ("4", "2", str(port))
        assert e["sum"] == 6.0 and e["args"] == ["--lr", "0.1"]


def test_a_failing_worker_stops_the_job_and_is_named(worker_script):
    job = subprocess.run(LAUNCH + ["--standalone", "--nproc-per-node", "2", worker_script, "fail"],
                         capture_output=True, text=True, timeout=120)
    assert job.returncode == 1
    assert "worker rank 1 (local_rank 1" in job.stderr and "exited with code 1" in job.stderr
    report = job.stderr[job.stderr.index("kiln.distributed.run: worker rank 1"):]
    assert "ValueError: rank 1 breaks on purpose" in report


def test_worker_environments_follow_torchrun():
    args = run.parse_args(["--nnodes", "3", "--node-rank", "2", "--nproc-per-node", "2", "--master-addr", "10.0.0.1",
                           "--master-port", "1234", "--run-id", "job", "train.py", "--epochs", "3"])
    envs = run.worker_environments(args, base={})
    assert [(e["RANK"], e["LOCAL_RANK"], e["GROUP_RANK"]) for e in envs] == [("4", "0", "2"), ("5", "1", "2")]
    assert {(e["WORLD_SIZE"], e["MASTER_ADDR"], e["MASTER_PORT"], e["TORCHELASTIC_RUN_ID"], e["OMP_NUM_THREADS"])
            for e in envs} == {("6", "10.0.0.1", "1234", "job", "1")}
    assert args.training_script_args == ["--epochs", "3"]


def test_launcher_argument_errors(capsys):
    with pytest.raises(SystemExit):
        run.parse_args(["--nnodes", "2", "--node-rank", "2", "train.py"])
    assert "--node-rank 2 is out of range for --nnodes 2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run.parse_args(["--max-restarts", "3", "train.py"])
    assert "does not restart workers" in capsys.readouterr().err


def test_signals_reach_the_workers(tmp_path):
    script = tmp_path / "wait.py"
    script.write_text(textwrap.dedent("""
        import os, signal, sys, time
        def stop(signum, frame):
            sys.stdout.write(f"rank {os.environ['RANK']} got {signum}\\n")  # one write: see WORKER
            sys.exit(0)
        signal.signal(signal.SIGTERM, stop)
        sys.stdout.write("ready\\n")
        time.sleep(60)
    """))
    job = subprocess.Popen(LAUNCH + ["--standalone", "--nproc-per-node", "2", str(script)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = 0
    while ready < 2:
        line = job.stdout.readline()
        assert line, "a worker exited before it was ready"
        ready += line.strip() == "ready"
    job.send_signal(signal.SIGTERM)
    out, err = job.communicate(timeout=60)
    assert job.returncode == 128 + signal.SIGTERM, err
    assert sorted(out.split("\n")[:2]) == [f"rank 0 got {signal.SIGTERM}", f"rank 1 got {signal.SIGTERM}"]
    assert "got signal 15; the workers were stopped" in err
