"""Runs INSIDE the sandbox, as the student's process: nothing it reports is trusted.

    python runner.py JOB_DIR FD

Reads ``JOB_DIR/job.json`` (setup cells from the course's source, the student's answer cells,
probe names), executes the cells in an IPython shell (so magics work as in Jupyter), then runs
each probe from the job's probe files against the resulting namespace with inputs from
``JOB_DIR/inputs.pt``. Every result is streamed to file descriptor FD as a length-prefixed
``torch.save`` frame of plain data; the trusted grader loads each frame with
``weights_only=True`` and recomputes what it can. Frames are sent as soon as they exist, so
a submission that later kills this process keeps the results it had earned.

Each probe runs in a process of its own, forked once the answer cells have run, under a
deadline this process enforces: a hang (even one that swallows the deadline's exception), a
crash or an exit in one exercise's code costs that exercise alone. The probe's process sends its
one frame through a private pipe; this process forwards it whole, or, if none came, a
``stopped`` frame saying how the probe's process ended (the trusted side words the message).

Inside the sandbox (``job["isolated"]``), an answer cell or probe that fails leaves no process
behind: a fork bomb that ends in an error would otherwise starve the probes until the wall-clock
limit. A forked child that returns into this loop exits at once, so only the runner reports.
"""
import io
import json
import os
import signal
import struct
import sys
# Bound when the runner starts, before any student code could replace them.
from os import _exit as exit_now, close, fork, getpid, kill, pipe, read, waitpid, waitstatus_to_exitcode, write
from select import POLLIN, poll
from signal import ITIMER_REAL, SIGALRM, setitimer
from signal import signal as set_handler
from time import monotonic, sleep

TEXT_LIMIT = 4000
GRACE_S = 2  # after its own deadline, the time a probe's process has to send what it has
REARM_S = 1  # a deadline that the code caught is raised again this often
NICE_WAIT_S = 2  # how long keep_nice waits its turn while other sandboxes set their groups' nice


def main(job_dir: str, fd: int) -> None:
    """A cold run: the job's files in ``job_dir``."""
    keep_nice()
    import torch

    with open(os.path.join(job_dir, "job.json"), encoding="utf-8") as f:
        job = json.load(f)
    inputs_path = os.path.join(job_dir, "inputs.pt")
    inputs = torch.load(inputs_path, weights_only=True) if os.path.exists(inputs_path) else {}
    probe_sources = {}
    for name in job["probe_files"]:
        with open(os.path.join(job_dir, name), encoding="utf-8") as f:
            probe_sources[name] = f.read()
    run_job(job, inputs, probe_sources, fd)


def run_job(job: dict, inputs: dict, probe_sources: dict, fd: int) -> None:
    """Run the setup cells, the answers and the probes, streaming frames to ``fd``; never returns.
    A warm sandbox's child calls it directly, its inputs read before any student code runs."""
    import torch

    save, BytesIO, pack, threads = torch.save, io.BytesIO, struct.pack, torch.set_num_threads  # before student code
    runner_pid = getpid()

    def encode(kind: str, name: str, data) -> bytes:
        buffer = BytesIO()
        save({"kind": kind, "name": name, "data": data}, buffer)
        payload = buffer.getvalue()
        return pack(">I", len(payload)) + payload

    def send(kind: str, name: str, data) -> None:
        if getpid() != runner_pid:  # a fork of the runner made by student code
            exit_now(0)
        _write_all(fd, encode(kind, name, data))

    torch.set_num_threads(1)

    from IPython.utils.capture import capture_output

    shell = make_shell()
    probes: dict = {"__name__": "probes"}  # loaded before any student code, so they hold the real objects
    for name, source in probe_sources.items():
        exec(compile(source, name, "exec"), probes)
    for index, source in enumerate(job["setup"]):
        ok, error, _ = _run_cell(shell, capture_output, source, job["cell_s"])
        if not ok:
            send("setup", str(index), {"error": error})
    send("setup_done", "", None)  # every frame before this one was sent before any student code ran
    for grade_id, source in job["answers"].items():
        ok, error, text = _run_cell(shell, capture_output, source, job["cell_s"])
        send("cell", grade_id, {"ok": ok, "error": error, "output": text})
        if not ok and job.get("isolated"):
            _end_other_processes()

    for name in job["probes"]:
        threads(1)  # fork() copies no OpenMP threads: a parallel region in the probe would wait for them forever
        frame, stopped = _probe_in_child(probes[name], shell.user_ns, inputs.get(name), name, job["cell_s"],
                                         job["frame_bytes"], encode)
        if frame is not None:
            _write_all(fd, frame)
            continue
        send("stopped", name, stopped)
        if job.get("isolated"):
            _end_other_processes()
    send("done", "", None)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # student code may have replaced the stream
            pass
    exit_now(0)  # skips interpreter teardown (about 0.5 s with torch loaded): everything is sent


def keep_nice() -> None:
    """Call after setsid() (bubblewrap's --new-session is one): Linux schedules each session as a
    group of its own (autogroup), at nice 0 whatever its processes' nice. The group gets this
    process's nice, so a grader started with ``nice`` stays below other work, sandboxes included."""
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    give_up = monotonic() + NICE_WAIT_S
    while nice > 0:
        try:
            with open("/proc/self/autogroup", "w") as group:
                group.write(str(nice))
            return
        except BlockingIOError:  # without CAP_SYS_ADMIN the kernel takes one such write per 0.1 s, machine-wide
            if monotonic() > give_up:
                return
            sleep(0.02)
        except OSError:  # a kernel without autogroups, or no /proc: there is no group to lower
            return


def make_shell():
    """The IPython shell the cells run in (one per process: a warm sandbox makes it before it forks)."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    return InteractiveShell.instance(config=config, colors="nocolor")


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[write(fd, data):]


def _probe_in_child(probe, namespace, data, name: str, seconds: int, frame_cap: int, encode):
    """Run one probe in a forked child: (its frame, None), or (None, how its process ended)."""
    ends = ()
    try:
        ends = pipe()
        pid = fork()
    except OSError as exc:  # the process or open-file limit, reached by what the answers left running or open
        for end in ends:
            close(end)
        return None, {"reason": "fork", "status": exc.errno or 0}
    read_end, write_end = ends
    if pid == 0:
        try:
            close(read_end)
            _probe_child(probe, namespace, data, name, seconds, encode, write_end)
        finally:
            exit_now(0)  # whatever happened, the child never returns into the runner's loop
    close(write_end)
    frame, reason = _receive(read_end, seconds + GRACE_S, frame_cap)
    close(read_end)
    try:
        kill(pid, signal.SIGKILL)  # done or not, the probe's process ends here
    except ProcessLookupError:
        pass
    try:
        status = waitstatus_to_exitcode(waitpid(pid, 0)[1])
    except ChildProcessError:  # the answers set SIGCHLD to SIG_IGN: the child was reaped, its status is lost
        status = 0
    if frame is not None:
        return frame, None
    return None, {"reason": reason or ("signal" if status < 0 else "exit"), "status": abs(status)}


def _probe_child(probe, namespace, data, name: str, seconds: int, encode, out: int) -> None:
    me = getpid()
    try:
        with _deadline(seconds):
            result = probe(namespace, data)
    except BaseException as exc:  # the student's code may raise anything, SystemExit included
        result = {"error": _describe(exc)}
    if getpid() != me:  # a fork made by the student's code
        return
    try:
        frame = encode("probe", name, result)
    except BaseException as exc:
        frame = encode("probe", name, {"error": f"the result could not be sent back: {_describe(exc)}"})
    _write_all(out, frame)


def _receive(fd: int, seconds: float, cap: int):
    """One length-prefixed frame read from ``fd`` within ``seconds``: (frame, None), or (None, why
    not: "timeout", "output" for a frame over ``cap`` bytes, or None when the writer closed early)."""
    deadline, data, poller = monotonic() + seconds, bytearray(), poll()
    poller.register(fd, POLLIN)
    while True:
        if len(data) >= 4:
            size = 4 + struct.unpack(">I", data[:4])[0]
            if size - 4 > cap:
                return None, "output"
            if len(data) >= size:
                return bytes(data[:size]), None
        left = deadline - monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            return None, "timeout"
        chunk = read(fd, 1 << 20)
        if not chunk:
            return None, None
        data += chunk


def _end_other_processes() -> None:
    """SIGKILL every other process this uid has in the sandbox's pid namespace (never used
    outside the sandbox, where -1 would mean all of the grading user's processes)."""
    import time

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # until nothing is left: a fork bomb forks during a sweep
        try:
            os.kill(-1, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):  # nothing left that this uid may signal
            break
        _reap()
        time.sleep(0.005)  # a killed process with a large address space takes a moment to exit


def _reap() -> None:
    """Collect the runner's dead children (zombies still count against the process limit)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _run_cell(shell, capture_output, source: str, seconds: int):
    """(ok, error text or None, captured output) for one cell."""
    try:
        with capture_output() as captured, _deadline(seconds):
            result = shell.run_cell(source, store_history=False, silent=True)
        error = result.error_before_exec or result.error_in_exec
    except BaseException as exc:
        captured, error = None, exc
    text = "" if captured is None else (captured.stdout + captured.stderr)[-TEXT_LIMIT:]
    return error is None, None if error is None else _describe(error), text


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:TEXT_LIMIT]


class DeadlineExceeded(BaseException):
    """Raised into the student's code at a deadline. A BaseException, unlike TimeoutError (an
    OSError): ``except Exception`` does not catch it, nor do library loops that skip OSErrors
    (glob over an unreadable tree, for one)."""


class _deadline:
    """Raise DeadlineExceeded in the main thread after ``seconds``, and again every REARM_S while
    the code goes on (it caught the first); the sandbox's wall-clock limit backs this up."""

    def __init__(self, seconds: int):
        self.seconds = seconds

    def __enter__(self):
        def expire(signum, frame):
            setitimer(ITIMER_REAL, REARM_S)
            raise DeadlineExceeded(f"the grader stopped it after {self.seconds} s: it did not finish in time")
        self.previous = set_handler(SIGALRM, expire)
        setitimer(ITIMER_REAL, self.seconds)

    def __exit__(self, *exc):
        setitimer(ITIMER_REAL, 0)
        set_handler(SIGALRM, self.previous)
        return False


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
