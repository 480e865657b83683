"""Runs INSIDE the sandbox, as the student's process: nothing it reports is trusted.

    python runner.py JOB_DIR FD

Reads ``JOB_DIR/job.json`` (setup cells from the course's source, the student's answer cells,
probe names), executes the cells in an IPython shell (so magics work as in Jupyter), then runs
each probe from the job's probe files against the resulting namespace with inputs from
``JOB_DIR/inputs.pt``. Every result is streamed to file descriptor FD as a length-prefixed
``torch.save`` frame of plain data; the trusted grader loads each frame with
``weights_only=True`` and recomputes what it can. Frames are sent as soon as they exist, so
a submission that later kills this process keeps the results it had earned.

Inside the sandbox (``job["isolated"]``), an answer cell that fails leaves no process behind: a
fork bomb that ends in an error would otherwise starve the probes until the wall-clock limit.
A forked child that returns into this loop exits at once, so only the runner reports.
"""
import io
import json
import os
import signal
import struct
import sys

TEXT_LIMIT = 4000


def main(job_dir: str, fd: int) -> None:
    import torch

    write, save, BytesIO, pack = os.write, torch.save, io.BytesIO, struct.pack  # bound before student code runs
    getpid, runner_pid, exit_now = os.getpid, os.getpid(), os._exit

    def send(kind: str, name: str, data) -> None:
        if getpid() != runner_pid:  # a fork of the runner made by student code
            exit_now(0)
        buffer = BytesIO()
        save({"kind": kind, "name": name, "data": data}, buffer)
        payload = buffer.getvalue()
        frame = pack(">I", len(payload)) + payload
        while frame:
            frame = frame[write(fd, frame):]

    with open(os.path.join(job_dir, "job.json"), encoding="utf-8") as f:
        job = json.load(f)
    inputs_path = os.path.join(job_dir, "inputs.pt")
    inputs = torch.load(inputs_path, weights_only=True) if os.path.exists(inputs_path) else {}
    torch.set_num_threads(1)

    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config, colors="nocolor")
    probes: dict = {"__name__": "probes"}  # loaded before any student code, so they hold the real objects
    for name in job["probe_files"]:
        with open(os.path.join(job_dir, name), encoding="utf-8") as f:
            exec(compile(f.read(), name, "exec"), probes)
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
        try:
            with _deadline(job["cell_s"]):
                data = probes[name](shell.user_ns, inputs.get(name))
        except BaseException as exc:  # the student's code may raise anything, SystemExit included
            data = {"error": _describe(exc)}
        send("probe", name, data)
    send("done", "", None)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # student code may have replaced the stream
            pass
    exit_now(0)  # skips interpreter teardown (about 0.5 s with torch loaded): everything is sent


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


class _deadline:
    """Raise TimeoutError in the main thread after ``seconds`` (the sandbox also has a hard limit)."""

    def __init__(self, seconds: int):
        self.seconds = seconds

    def __enter__(self):
        def expire(signum, frame):
            raise TimeoutError(f"took longer than {self.seconds} s")
        self.previous = signal.signal(signal.SIGALRM, expire)
        signal.alarm(self.seconds)

    def __exit__(self, *exc):
        signal.alarm(0)
        signal.signal(signal.SIGALRM, self.previous)
        return False


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
