"""The sandbox itself: what untrusted code can and cannot do inside it."""
import os
import sys
from pathlib import Path

import pytest

from grader import sandbox


FAST = sandbox.Limits(wall_s=20, cpu_s=10)


def run(tmp_path, code, limits=FAST):
    return sandbox.run(tmp_path, [sys.executable, "-c", code], limits=limits)


def test_sandbox_is_available_here():
    assert sandbox.probe() is None  # `make test` installs bubblewrap; without it grading refuses to run


def test_results_come_back_through_the_pipe(tmp_path):
    assert run(tmp_path, "import os; os.write({fd}, b'hello')").output == b"hello"


def test_no_network(tmp_path):
    out = run(tmp_path, "import socket, os\ntry:\n socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
                        "except OSError as e: os.write({fd}, type(e).__name__.encode())").output
    assert out in (b"OSError", b"ConnectionRefusedError", b"TimeoutError") or b"Error" in out


def test_private_filesystem(tmp_path):
    (tmp_path / "job.txt").write_text("visible")
    tmp_path.chmod(0o755)
    (tmp_path / "job.txt").chmod(0o644)
    code = ("import os, json\n"
            "seen = {p: os.path.exists(p) for p in [%r, %r, %r, '/job/job.txt', os.path.expanduser('~/.bashrc')]}\n"
            "try:\n open('/job/new', 'w'); seen['job_writable'] = True\n"
            "except OSError: seen['job_writable'] = False\n"
            "os.write({fd}, json.dumps(seen).encode())") % (
        str(Path(__file__).resolve().parent.parent / "grader"), str(Path(__file__).resolve().parent.parent / "solutions"),
        str(Path(__file__).resolve()))
    import json
    seen = json.loads(run(tmp_path, code).output)
    assert seen.pop("/job/job.txt") is True
    assert not any(seen.values()), seen


def test_wall_clock_limit(tmp_path):
    result = run(tmp_path, "while True: pass", sandbox.Limits(wall_s=2, cpu_s=60))
    assert result.timed_out and result.seconds < 10


def test_cpu_limit(tmp_path):
    result = run(tmp_path, "while True: pass", sandbox.Limits(wall_s=30, cpu_s=1))
    assert not result.timed_out and result.returncode != 0 and result.seconds < 20


def test_memory_limit(tmp_path):
    out = run(tmp_path, "import os\ntry:\n x = bytearray(20 * 2**30)\nexcept MemoryError: os.write({fd}, b'MemoryError')")
    assert out.output == b"MemoryError"


def test_process_limit_stops_a_fork_bomb(tmp_path):
    code = ("import os, time\nn = 0\ntry:\n while True:\n  if os.fork() == 0: time.sleep(60); os._exit(0)\n  n += 1\n"
            "except OSError: os.write({fd}, str(n).encode())")
    result = run(tmp_path, code)
    assert result.output and int(result.output) < 1000


def test_no_process_outlives_its_run(tmp_path):
    code = ("import subprocess, os\n"
            "subprocess.Popen(['sleep', '301.25'], start_new_session=True)\n"
            "if os.fork() == 0:\n os.setsid(); import time; time.sleep(301.25)\n"
            "os.write({fd}, b'left children behind')")
    assert run(tmp_path, code).output == b"left children behind"
    assert not [pid for pid in _pids_with("sleep") if pid != os.getpid()]


def test_output_flood_is_cut_off_early(tmp_path):
    result = run(tmp_path, "import os\nwhile True: os.write({fd}, b'x' * 65536)", sandbox.Limits(wall_s=30, output_bytes=2**20))
    assert result.output_truncated and len(result.output) == 2**20 and result.seconds < 15


@pytest.mark.skipif(os.geteuid() != 0, reason="uid switching is the root mode")
def test_runs_as_an_unprivileged_uid(tmp_path):
    out = run(tmp_path, "import os; os.write({fd}, str(os.getuid()).encode())").output
    assert sandbox.UID_BASE <= int(out) < sandbox.UID_BASE + sandbox.BLOCKS * sandbox.SLOTS_PER_BLOCK


def _pids_with(word):
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if word.encode() in cmdline.read_bytes() and b"301.25" in cmdline.read_bytes():  # ours, not any sleep
                pids.append(int(cmdline.parent.name))
        except OSError:
            continue
    return pids


@pytest.mark.parametrize("isolate", [True, False], ids=["sandbox", "no-sandbox"])
def test_student_code_sees_no_gpu_and_cannot_record(tmp_path, monkeypatch, isolate):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")      # as on a grading machine with a GPU
    monkeypatch.setenv("COURSE_RECORDS", str(tmp_path / "records.jsonl"))
    code = ("import os, json; os.write({fd}, json.dumps([os.environ.get('CUDA_VISIBLE_DEVICES'), "
            "os.environ.get('COURSE_RECORDS')]).encode())")
    result = sandbox.run(tmp_path, [sys.executable, "-c", code], limits=FAST, isolate=isolate)
    import json
    assert json.loads(result.output) == ["", ""]


def test_a_frame_that_claims_a_cuda_tensor_is_loaded_on_the_cpu():
    """A student's process could tag a tensor cuda:0; the trusted side must not touch a GPU for it
    (and must not fail where there is none)."""
    import io
    import zipfile

    import torch

    from grader.grading import _load

    saved = io.BytesIO()
    torch.save({"kind": "probe", "name": "x", "data": torch.ones(3)}, saved)
    forged = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(saved.getvalue())) as src, zipfile.ZipFile(forged, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name.endswith("data.pkl"):
                data = data.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
                assert b"cuda:0" in data
            dst.writestr(name, data)
    frame = _load(forged.getvalue())
    assert frame is not None and frame["data"].device.type == "cpu"
    assert torch.equal(frame["data"], torch.ones(3))


def test_concurrent_grading_runs_never_share_slots():
    """Shards or courses grading on one machine: each run holds its own block of slots (uids)."""
    with sandbox.claim_slots(4) as first, sandbox.claim_slots(4) as second:
        assert abs(first - second) >= sandbox.SLOTS_PER_BLOCK
        import subprocess as sp
        other = sp.run([sys.executable, "-c", "from grader import sandbox\n"
                        "with sandbox.claim_slots(2) as s: print(s)"], capture_output=True, text=True, check=True)
        assert int(other.stdout) not in (first, second)  # another process sees both blocks as taken
    with sandbox.claim_slots(1) as again:
        assert again <= max(first, second)  # both blocks were released on exit
    with pytest.raises(ValueError):
        with sandbox.claim_slots(sandbox.SLOTS_PER_BLOCK + 1):
            pass


def test_two_grading_runs_at_once_do_not_kill_each_others_sandboxes(tmp_path):
    """Two instructors, courses or shards on one machine: a run's clean-up after each submission
    (every process of its slot's uid is killed, in root mode) never reaches the other run."""
    import subprocess as sp

    slow = ("import os, subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])  # a child, as DataLoader starts\n"
            "time.sleep(6); os.write({fd}, b'survived')")
    other = sp.Popen([sys.executable, "-c", "import sys\nfrom pathlib import Path\nfrom grader import sandbox\n"
                      f"r = sandbox.run(Path({str(tmp_path)!r}), [sys.executable, '-c', {slow!r}],"
                      " limits=sandbox.Limits(wall_s=30))\nprint(r.output.decode(), r.returncode)"],
                     stdout=sp.PIPE, text=True, cwd=sandbox.REPO_ROOT)
    quick = [run(tmp_path, "import os; os.write({fd}, b'ok')") for _ in range(6)]  # each ends with a clean-up
    assert [r.output for r in quick] == [b"ok"] * 6
    assert other.communicate(timeout=60)[0].split() == ["survived", "0"]


def test_a_slot_this_run_did_not_claim_is_refused(tmp_path):
    """A script that picks a slot number itself could clean up another run's uid: refused."""
    with pytest.raises(ValueError, match="claim_slots"):
        sandbox.run(tmp_path, [sys.executable, "-c", "pass"], slot=3, limits=FAST)
    with sandbox.claim_slots(2) as first:
        assert sandbox.run(tmp_path, [sys.executable, "-c", "import os; os.write({fd}, b'ok')"],
                           slot=first + 1, limits=FAST).output == b"ok"


def test_a_forked_worker_does_not_keep_the_runs_slots():
    """autograde forks its workers: one that outlives its run (say the run was killed) holds no block."""
    import fcntl
    import signal
    import time

    ready, started = os.pipe()
    with sandbox.claim_slots(1) as first:
        pid = os.fork()
        if pid == 0:  # a worker that lingers
            os.write(started, b"1")
            time.sleep(30)
            os._exit(0)
        os.read(ready, 1)  # the child is past fork(), so its at-fork hooks have run
    try:
        with open(sandbox.SLOT_LOCKS / f"block-{first // sandbox.SLOTS_PER_BLOCK}.lock") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError while the child holds it
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(ready)
        os.close(started)


def test_dataloader_workers_run_inside_the_sandbox(tmp_path):
    """Notebook 06 grades multi-worker DataLoaders: workers need a writable /dev/shm."""
    code = ("import os, torch\n"
            "from torch.utils.data import DataLoader\n"
            "loader = DataLoader(list(range(8)), batch_size=2, num_workers=2)\n"
            "os.write({fd}, repr([b.tolist() for b in loader]).encode())")
    result = run(tmp_path, code, sandbox.Limits(wall_s=60, cpu_s=60))
    assert result.output == b"[[0, 1], [2, 3], [4, 5], [6, 7]]", result.log


def _run_answers(tmp_path, answers: dict, probe: str, limits=FAST):
    """The real runner in the sandbox on hand-made answer cells and one probe; returns Evidence."""
    import json
    import shutil

    from grader import grading

    shutil.copy(grading.RUNNER, tmp_path / "runner.py")
    (tmp_path / "probe.py").write_text(probe)
    job = {"setup": [], "answers": answers, "probes": ["probe"], "probe_files": ["probe.py"], "cell_s": 10,
           "frame_bytes": limits.output_bytes, "isolated": True}  # the fields grading._write_job writes
    (tmp_path / "job.json").write_text(json.dumps(job))
    for path in tmp_path.iterdir():
        path.chmod(0o644)
    tmp_path.chmod(0o755)
    run = sandbox.run(tmp_path, [sys.executable, f"{sandbox.JOB_MOUNT}/runner.py", sandbox.JOB_MOUNT, "{fd}"],
                      limits=limits)
    return grading.parse(run, limits)


def test_a_failed_answer_cell_leaves_no_process_behind(tmp_path):
    leave_child_and_fail = "import os, time\nif os.fork() == 0:\n    time.sleep(60)\n    os._exit(0)\nraise RuntimeError('no')"
    count = "import os\nn = sum(p.isdigit() for p in os.listdir('/proc'))"  # bwrap's init and the runner
    evidence = _run_answers(tmp_path, {"a": leave_child_and_fail, "b": count}, "def probe(ns, _):\n    return ns['n']\n")
    assert evidence.cells["a"]["ok"] is False and evidence.failure is None
    assert evidence.probes["probe"] == 2


def test_a_fork_bomb_that_fails_does_not_starve_the_checks(tmp_path):
    evidence = _run_answers(tmp_path, {"a": "import os\nwhile True:\n    os.fork()", "b": "x = 41 + 1"},
                            "def probe(ns, _):\n    return ns['x']\n", sandbox.Limits(wall_s=20, cpu_s=10, processes=64))
    assert evidence.probes["probe"] == 42 and evidence.failure is None  # within FAST's 20 s wall clock


def test_a_checkout_under_tmp_stays_visible_and_tmp_stays_private(tmp_path, monkeypatch):
    checkout = tmp_path / "course-checkout"  # pytest's tmp_path lies under /tmp, like a clone in /tmp would
    assert str(checkout).startswith("/tmp/")
    (checkout / "utils").mkdir(parents=True)
    (checkout / "utils" / "__init__.py").write_text("")
    (checkout / "utils" / "marker.py").write_text("VALUE = 42\n")
    (checkout / "secret.txt").write_text("not for students")
    (checkout / "utils").chmod(0o755)  # the sandbox's uid reads the bound folder itself, not its parents
    for name in ("__init__.py", "marker.py"):
        (checkout / "utils" / name).chmod(0o644)
    monkeypatch.setattr(sandbox, "REPO_ROOT", checkout)
    job = tmp_path / "job"
    job.mkdir(mode=0o755)
    code = ("import os\nfrom utils import marker  # this checkout's utils, not the editable install's\n"
            f"seen = [marker.VALUE,"
            f" os.path.exists({str(checkout / 'secret.txt')!r})]\n"
            "open('/tmp/scratch', 'w').write('ok'); seen.append(open('/tmp/scratch').read())\n"
            "os.write({fd}, repr(seen).encode())")
    assert run(job, code).output == b"[42, False, 'ok']"


def test_a_symlinked_venv_works_in_the_sandbox(tmp_path):
    """A venv reached through a symlink: the sandbox runs the interpreter by the name the grader used."""
    import subprocess as sp

    (tmp_path / "venv").symlink_to(sys.prefix)
    job = tmp_path / "job"
    job.mkdir(mode=0o755)
    code = ("import sys\nfrom pathlib import Path\nfrom grader import sandbox\n"
            f"r = sandbox.run(Path({str(job)!r}), [sys.executable, '-c', 'import os; os.write({{fd}}, b\"ok\")'])\n"
            "print(r.output.decode(), r.log[-300:])")
    out = sp.run([str(tmp_path / "venv" / "bin" / "python"), "-c", code], capture_output=True, text=True,
                 cwd=sandbox.REPO_ROOT, check=True).stdout
    assert out.split()[:1] == ["ok"], out
