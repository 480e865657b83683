"""The warm sandbox: one per grading worker, a forked child per submission. Nothing a child does
survives into the next child or reaches the warm process; when the warm one fails, grading falls
back to a cold sandbox and says so, with the same score."""
import dataclasses
import multiprocessing
import os
import signal
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from grader import grading, sandbox
from utils.paths import REPO_ROOT

LIMITS = sandbox.Limits(wall_s=8, cell_s=4, cpu_s=30)   # short: one test waits out the whole deadline
PROBE = "def probe(ns, _):\n    return ns.get('report')\n"


@pytest.fixture(scope="module")
def warm():
    with sandbox.claim_slots(1) as slot:
        warm = sandbox.WarmSandbox([grading.RUNNER, grading.ZYGOTE], ["torch"], slot, LIMITS)
        yield warm
        warm.close()


def _job(*answers: str) -> dict:
    """The runner's job for these answer cells and one probe, ``probe.py``."""
    return {"setup": [], "answers": {f"a{i}": a for i, a in enumerate(answers)}, "probes": ["probe"],
            "probe_files": ["probe.py"], "cell_s": LIMITS.cell_s, "frame_bytes": LIMITS.output_bytes,
            "isolated": True}


def run(warm, *answers: str, probe: str = PROBE):
    """The answer cells in one child of ``warm``; returns the Evidence the checks would get."""
    result = warm.run({"job": _job(*answers), "probes": {"probe.py": probe}}, b"")
    return grading.parse(result, LIMITS)


def report(warm, code: str):
    evidence = run(warm, code + "\nreport = seen")
    assert all(cell["ok"] for cell in evidence.cells.values()), evidence.cells
    return evidence.probes["probe"]


def test_a_job_runs_its_answers_and_probes(warm):
    evidence = run(warm, "x = 41", "report = x + 1")
    assert evidence.probes["probe"] == 42 and evidence.failure is None and evidence.environment is None


def test_a_submission_that_patches_torch_changes_nothing_for_the_next(warm):
    patch = ("import torch, builtins, sys, signal\n"
             "torch.add = lambda *a, **k: torch.zeros(1)\n"
             "torch.Tensor.sum = lambda self, *a, **k: torch.tensor(-1.0)\n"
             "builtins.round = lambda x, *a: 0\n"
             "sys.modules['math'] = None\n"
             "signal.signal(signal.SIGUSR1, signal.SIG_IGN)\n"
             "import os; os.environ['COURSE_RECORDS'] = 'hijacked'\n"
             "report = 'patched'")
    assert run(warm, patch).probes["probe"] == "patched"
    seen = report(warm, "import torch, math, os, signal\n"
                        "seen = [torch.add(torch.ones(1), 1).item(), torch.ones(3).sum().item(), round(2.6),\n"
                        "        math.sqrt(4.0), os.environ['COURSE_RECORDS'], signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL]")
    assert seen == [2.0, 3.0, 3, 2.0, "", True]


def test_files_written_by_a_submission_are_gone_for_the_next(warm):
    write = ("import os\n"
             "for folder in ('/tmp', '/dev/shm', os.getcwd()):\n"
             "    open(os.path.join(folder, 'left-behind'), 'w').write('for the next student')\n"
             "report = sorted(os.listdir('/tmp'))")
    assert "left-behind" in run(warm, write).probes["probe"]
    assert report(warm, "import os\nseen = [os.path.exists(os.path.join(f, 'left-behind'))"
                        " for f in ('/tmp', '/dev/shm', os.getcwd())]") == [False, False, False]


def test_a_submission_cannot_reach_the_warm_process(warm):
    """Every process its /proc shows (the warm one among them) is out of reach: no signal, no
    memory, no files, no environment; and nothing outside /tmp and /dev/shm is writable."""
    probe_all = ("import os, signal\n"
                 "seen, own = [], int(os.readlink('/proc/self'))  # its pid as /proc numbers it\n"
                 "for pid in [int(p) for p in os.listdir('/proc') if p.isdigit()]:\n"
                 "    if pid == own:\n"
                 "        continue\n"
                 "    for what, attempt in (('signal', lambda: os.kill(pid, 0)),\n"
                 "                          ('mem', lambda: open(f'/proc/{pid}/mem', 'r+b').close()),\n"
                 "                          ('environ', lambda: open(f'/proc/{pid}/environ', 'rb').read()),\n"
                 "                          ('root', lambda: os.listdir(f'/proc/{pid}/root/tmp')),\n"
                 "                          ('fd', lambda: os.listdir(f'/proc/{pid}/fd'))):\n"
                 "        try:\n"
                 "            if what != 'signal' or pid not in (1, os.getpid()):  # kill() numbers: its namespace's\n"
                 "                attempt()\n"
                 "            else:\n"
                 "                continue\n"
                 "            seen.append((pid, what))\n"
                 "        except OSError:\n"
                 "            pass\n"
                 "for path in ('/job/zygote.py', '/job/new', '/usr/lib/python3/x'):\n"
                 "    try:\n"
                 "        open(path, 'a').close(); seen.append(path)\n"
                 "    except OSError:\n"
                 "        pass\n"
                 "visible = [p for p in os.listdir('/proc') if p.isdigit()]")
    evidence = run(warm, probe_all + "\nreport = [seen, len(visible)]")
    assert evidence.cells["a0"]["ok"], evidence.cells
    reached, visible = evidence.probes["probe"]
    assert visible > 2, "the test must see processes other than its own to mean anything"
    assert reached == [], f"a submission reached another process or a file: {reached}"


def test_a_thread_or_process_left_running_dies_with_its_submission(warm):
    baseline = report(warm, "import os, threading\nseen = [threading.active_count(),"
                            " sum(p.isdigit() for p in os.listdir('/proc'))]")
    leave = ("import os, threading, time\n"
             "def forever():\n"
             "    while True:\n"
             "        open('/tmp/thread-was-here', 'w').write(str(time.time())); time.sleep(0.01)\n"
             "threading.Thread(target=forever, daemon=False).start()\n"
             "if os.fork() == 0:\n"
             "    os.setsid()\n"
             "    while True:\n"
             "        time.sleep(0.01)\n"
             "report = 'left'")
    assert run(warm, leave).probes["probe"] == "left"
    after = report(warm, "import os, threading, time\ntime.sleep(0.3)\n"
                         "seen = [threading.active_count(), sum(p.isdigit() for p in os.listdir('/proc')),"
                         " os.path.exists('/tmp/thread-was-here')]")
    assert after == [*baseline, False]


@pytest.mark.parametrize("kill", ["os.kill(os.getppid(), signal.SIGKILL)", "os.kill(1, signal.SIGKILL)",
                                  "os.kill(-1, signal.SIGKILL)", "os.killpg(0, signal.SIGKILL)",
                                  "[os.kill(int(p), signal.SIGKILL) for p in os.listdir('/proc')"
                                  " if p.isdigit() and int(p) != os.getpid()]"])
def test_a_submission_that_kills_its_parent_harms_nobody_else(warm, kill):
    evidence = run(warm, "x = 1", f"import os, signal\ntry:\n    {kill}\nexcept OSError:\n    pass\nreport = 'after'")
    assert evidence.cells["a0"]["ok"] and evidence.environment is None
    assert warm.alive(), "the warm process must survive"
    assert run(warm, "report = 'next'").probes["probe"] == "next"


def test_the_child_runs_unprivileged_in_namespaces_of_its_own(warm):
    seen = report(warm, "import os, socket\n"
                        "status = open('/proc/self/status').read()\n"
                        "caps = [l.split()[1] for l in status.splitlines() if l.startswith(('CapEff', 'CapPrm', 'CapBnd'))]\n"
                        "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=1); net = True\n"
                        "except OSError:\n    net = False\n"
                        "seen = [os.getuid() != 0, caps, net, os.getcwd()]")
    assert seen == [True, ["0000000000000000"] * 3, False, "/tmp"]


def test_a_stop_request_that_comes_after_its_child_ended_is_harmless(warm):
    """The grader asks to stop a child whose output overflowed; the child may have ended already."""
    assert run(warm, "report = 'first'").probes["probe"] == "first"
    warm._stop_child()
    assert run(warm, "report = 'second'").probes["probe"] == "second" and warm.alive()


def test_the_child_has_a_loopback_network_of_its_own(warm):
    """Notebook 10's probes run two-process gloo groups over 127.0.0.1; nothing else is reachable."""
    seen = report(warm, "import socket\n"
                        "server = socket.create_server(('127.0.0.1', 0))\n"
                        "client = socket.create_connection(server.getsockname(), timeout=5)\n"
                        "peer, _ = server.accept(); client.sendall(b'ping')\n"
                        "seen = peer.recv(4).decode()")
    assert seen == "ping"


def test_a_job_past_its_deadline_is_stopped_and_the_next_runs(warm):
    evidence = run(warm, "import time\nwhile True:\n    try:\n        time.sleep(1)\n    except BaseException:\n        pass")
    assert "a0" not in evidence.cells and "the time limit for the whole notebook" in evidence.failure
    assert run(warm, "report = 'next'").probes["probe"] == "next"


def test_a_warm_sandbox_that_dies_mid_job_falls_back_to_a_cold_one(monkeypatch, tmp_path):
    """No score is lost: the submission is graded again in a cold sandbox, and its notes say so."""
    from grader import course

    assignment = course.find("01_tensors_devices")
    folder = tmp_path / assignment.id
    folder.mkdir()
    (folder / assignment.notebook_name).write_bytes((assignment.source_dir / assignment.notebook_name).read_bytes())
    limits = sandbox.Limits(wall_s=120, cell_s=40)   # a whole notebook, cold, on a busy machine
    with sandbox.claim_slots(1) as slot:
        plain = grading.grade(folder, "s", assignment.id, slot=slot, limits=limits, warm=False)
        original = sandbox.WarmSandbox.run

        def dying(self, job, data):
            os.killpg(self.proc.pid, signal.SIGKILL)
            return original(self, job, data)

        monkeypatch.setattr(sandbox.WarmSandbox, "run", dying)
        fallen = grading.grade(folder, "s", assignment.id, slot=slot, limits=limits)
        monkeypatch.setattr(sandbox.WarmSandbox, "run", original)
        again = grading.grade(folder, "s", assignment.id, slot=slot, limits=limits)
        for _, warm in grading._WARM.values():
            warm.close()
    assert fallen.verdicts == plain.verdicts == again.verdicts and plain.environment is None
    assert any("fresh sandbox" in note for note in fallen.notes), fallen.notes
    assert not any("fresh sandbox" in note for note in again.notes), "the next one gets a new warm sandbox"


def test_a_checkout_under_tmp_stays_visible_read_only_in_each_child(tmp_path, monkeypatch):
    """A clone under /tmp (as CI's may be): bubblewrap binds its utils over the sandbox's /tmp, and
    each child's fresh /tmp must carry that bind over, read-only, and nothing else of the checkout."""
    checkout = tmp_path / "course-checkout"
    assert str(checkout).startswith("/tmp/")
    (checkout / "utils").mkdir(parents=True)
    (checkout / "utils" / "__init__.py").write_text("")
    (checkout / "utils" / "marker.py").write_text("VALUE = 42\n")
    (checkout / "secret.txt").write_text("not for students")
    (checkout / "utils").chmod(0o755)
    for name in ("__init__.py", "marker.py"):
        (checkout / "utils" / name).chmod(0o644)
    monkeypatch.setattr(sandbox, "REPO_ROOT", checkout)
    code = ("import os\nfrom utils import marker   # imported in the child, not preloaded\n"
            f"seen = [marker.VALUE, os.path.exists({str(checkout / 'secret.txt')!r})]\n"
            "try:\n"
            f"    open({str(checkout / 'utils' / 'new.py')!r}, 'w'); seen.append('writable')\n"
            "except OSError:\n"
            "    seen.append('read-only')\n"
            "open('/tmp/scratch', 'w').write('ok'); seen.append(open('/tmp/scratch').read())")
    with sandbox.claim_slots(1) as slot:
        warm = sandbox.WarmSandbox([grading.RUNNER, grading.ZYGOTE], ["torch"], slot, LIMITS)
        try:
            assert report(warm, code) == [42, False, "read-only", "ok"]
            assert report(warm, "import os\nseen = os.path.exists('/tmp/scratch')") is False
        finally:
            warm.close()


def test_a_batch_preloads_what_its_own_assignments_import():
    """A worker's warm sandbox imports the setup modules of the assignments in its batch: one that
    grades 03 alone does not pay for 08's torch._dynamo."""
    only_03 = grading.preload_modules(frozenset({"03_building_models"}))
    every = grading.preload_modules()
    assert "torch" in only_03 and "torch._dynamo" not in only_03 and "torch._dynamo" in every
    assert set(only_03) < set(every) and grading.preload_modules(frozenset()) == []


def test_a_slot_has_one_warm_sandbox_at_a_time():
    """Closing a sandbox kills every process of its slot's user, so a slot's sandbox for another
    batch (or other limits) replaces the old one instead of running beside it."""
    with sandbox.claim_slots(1) as slot:
        first = grading._warm_sandbox(slot, LIMITS, frozenset())
        assert grading._warm_sandbox(slot, LIMITS, frozenset()) is first
        second = grading._warm_sandbox(slot, LIMITS, frozenset({"02_tensor_toolbox"}))
        try:
            assert second is not first and not first.alive() and second.alive()
            assert report(second, "import torch\nseen = torch.ones(2).sum().item()") == 2.0
        finally:
            grading._WARM.pop(slot)[1].close()


# Student code reports its scheduling group: Linux gives every session one (autogroup), at nice 0
# whatever its processes' nice, and the cold runner, the warm sandbox and each child are sessions.
NICE = 7
AUTOGROUP = "import os\nreport = [open('/proc/self/autogroup').read().split()[-1], os.nice(0)]"


def _seen_by_student_code(probe_file: Path) -> dict:
    """What AUTOGROUP reports in a warm sandbox's child and in a cold sandbox, graded from here."""
    with sandbox.claim_slots(1) as slot:
        warm = sandbox.WarmSandbox([grading.RUNNER, grading.ZYGOTE], [], slot, LIMITS)
        try:
            seen = {"warm": run(warm, AUTOGROUP).probes}
        finally:
            warm.close()
        cold_limits = dataclasses.replace(LIMITS, wall_s=30)   # a fresh Python imports torch first
        cold = grading._run_cold(_job(AUTOGROUP), SimpleNamespace(probe_files=[probe_file]), {}, slot, cold_limits,
                                 True)
        seen["cold"] = grading.parse(cold, cold_limits).probes
    return seen


@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"), reason="this kernel schedules no session groups")
def test_student_code_keeps_the_nice_of_a_niced_grader(tmp_path):
    """`nice python -m grader autograde` beside other work: the sandboxes' sessions stay niced."""
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"), initializer=os.nice,
                             initargs=(NICE,)) as niced:   # a grader process started with `nice -n 7`
        seen = niced.submit(_seen_by_student_code, probe).result(timeout=120)
    assert seen == {"warm": {"probe": [str(NICE), NICE]}, "cold": {"probe": [str(NICE), NICE]}}


# Without CAP_SYS_ADMIN (student code never has it) Linux takes one write of a group's nice per 0.1 s,
# machine-wide, and refuses the others with EAGAIN: a sandbox that starts just after another one set
# its group must wait its turn. Here the process sets its own group first, then asks keep_nice.
TURN = ("import os, sys, time\nsys.path[:0] = sys.argv[1:]\nimport runner\nfrom utils.priority import share_nice\n"
        "os.setsid()\nos.nice(7)\nwhile True:\n    try:\n        with open('/proc/self/autogroup', 'w') as group:\n"
        "            group.write('3')\n        break\n    except BlockingIOError:\n        time.sleep(0.02)\n"
        "{call}\nprint(open('/proc/self/autogroup').read().split()[-1])")


@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"), reason="this kernel schedules no session groups")
@pytest.mark.parametrize("call", ["runner.keep_nice()", "share_nice(os.getpid())"])   # the sandbox's, the kernels'
def test_the_nice_of_a_group_waits_its_turn_after_another_group_was_just_set(call):
    no_admin = ["setpriv", "--inh-caps=-all", "--bounding-set=-sys_admin", "--reuid=0"] if os.geteuid() == 0 else []
    done = subprocess.run([*no_admin, sys.executable, "-c", TURN.format(call=call), str(grading.RUNNER.parent),
                           str(REPO_ROOT)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(NICE)]
