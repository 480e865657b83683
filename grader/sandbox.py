"""Run untrusted code under bubblewrap: no network, a private filesystem, rlimits and a deadline.

What the sandboxed process sees:
- read-only: the system (/usr, /etc), the Python installation and the venv, and the course's
  ``utils`` package (public helper code the notebooks import); nothing else of the repo, so no
  solutions, no grader code, no gradebook, no other student's files;
- ``/job`` (read-only): the job's inputs; ``/tmp`` and ``/dev/shm`` (what multiprocessing and
  DataLoader workers use): private, size-limited tmpfs mounts;
- its own PID, network, IPC and UTS namespaces: no network at all, and when the run ends the
  PID namespace is torn down, so no process it started can outlive it.

Limits: CPU seconds, address space, processes, open files, file size (rlimits) and a wall-clock
deadline enforced from outside. When the grader runs as root (CI, containers) the code runs as
a dedicated unprivileged uid per worker slot, so the process limit applies to it alone; as an
ordinary user, bubblewrap maps the user into a new user namespace. Each grading run claims a
block of slots with a lock (``claim_slots``), so runs sharing a machine (shards, several
courses) never share a uid, its process limit or its clean-up.

Results travel back over a pipe, never through a shared file system, and are read with a cap.

``run`` starts a cold sandbox per job (a fresh Python); ``WarmSandbox`` keeps one running per
grading worker and runs each job in a child that isolates itself (``grader/zygote.py``).
"""
from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from utils.paths import REPO_ROOT

from .zygote import HEADER  # the warm sandbox's job header (the zygote itself imports nothing of the grader)

UID_BASE = 61000  # root mode: worker slot k runs as uid/gid UID_BASE + k
SLOTS_PER_BLOCK = 64  # a grading run claims one block of slots; other runs on the machine take others
BLOCKS = 15
SLOT_LOCKS = Path(tempfile.gettempdir()) / "torch-tips-grader-slots"
JOB_MOUNT = "/job"
_HELD: set[int] = set()  # first slot of each block this process (or the run that forked it) holds


@dataclass(frozen=True)
class Limits:
    wall_s: float = 180.0               # the whole run: setup, answers and probes
    cell_s: int = 60                    # one answer cell or probe (enforced inside; wall_s backs it up)
    cpu_s: int = 180
    memory_bytes: int = 6 * 2**30       # address space: importing torch alone maps ~3 GiB
    processes: int = 256                # threads count too
    open_files: int = 512
    file_bytes: int = 64 * 2**20
    tmp_bytes: int = 256 * 2**20
    shm_bytes: int = 128 * 2**20        # /dev/shm: DataLoader workers and multiprocessing locks use it
    output_bytes: int = 64 * 2**20      # results read back over the pipe
    log_bytes: int = 16 * 2**10         # tail of the sandbox's own stderr kept for diagnostics

    @classmethod
    def with_deadline(cls, cell_s: int) -> Limits:
        """The limits for a per-exercise deadline of ``cell_s`` seconds (``autograde --deadline``): the
        whole run gets three times as long, in wall-clock and CPU time, and never less than the default."""
        whole = max(cls.wall_s, 3 * cell_s)
        return cls(cell_s=cell_s, wall_s=whole, cpu_s=max(cls.cpu_s, int(whole)))


@dataclass
class RunResult:
    returncode: int | None
    timed_out: bool
    output: bytes
    output_truncated: bool
    log: str
    seconds: float


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create namespaces on this machine."""


def _mounts() -> list[str]:
    """Read-only system, interpreter and course code. Placed after the private /tmp, so a checkout
    or interpreter that lives under /tmp is still visible inside (bwrap mounts in order)."""
    args = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    seen = {"/", "/usr", "/etc", "/tmp", "/dev", "/proc"}  # /tmp is the sandbox's own tmpfs: never re-permed
    for given in (sys.base_prefix, sys.prefix, str(REPO_ROOT / "utils")):
        real = os.path.realpath(given)
        for path in dict.fromkeys((real, os.path.abspath(given))):  # a symlinked venv: both names must work
            if path in seen or any(path.startswith(p + "/") for p in ("/usr", "/etc")):
                continue
            parents = [str(p) for p in reversed(Path(path).parents) if str(p) != "/"]
            for parent in parents:  # bwrap would create missing parents 0700, unreadable to the sandbox uid
                if parent not in seen:
                    args += ["--perms", "0755", "--dir", parent]
                    seen.add(parent)
            args += ["--ro-bind", real, path]
            seen.add(path)
    return args


# Set for student code in both modes. CUDA_VISIBLE_DEVICES="" hides every GPU (grading runs on
# the CPU; a GPU would also be a channel out of the sandbox), COURSE_RECORDS="" stops recording.
STUDENT_ENV = {
    "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "PYTHONUNBUFFERED": "1",
    "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    "CUDA_VISIBLE_DEVICES": "", "KINETO_LOG_LEVEL": "6", "COURSE_RECORDS": "",
    "MPLBACKEND": "Agg",
}


def _course_path() -> dict:
    """The course's setup code imports ``utils`` from THIS checkout, whatever checkout the
    environment's editable install points at (PYTHONPATH comes before the install's .pth entry)."""
    return {"PYTHONPATH": str(REPO_ROOT)}


def _environment() -> list[str]:
    env = {"PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
           "LANG": "C.UTF-8", "MPLCONFIGDIR": "/tmp", **STUDENT_ENV, **_course_path()}
    args = ["--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args


@contextlib.contextmanager
def claim_slots(count: int):
    """Yield the first of ``count`` worker slots that no other grading run on this machine holds;
    they stay this run's until the block exits (an OS file lock: a killed run frees them too)."""
    if not 1 <= count <= SLOTS_PER_BLOCK:
        raise ValueError(f"a grading run can use 1 to {SLOTS_PER_BLOCK} worker slots, not {count}")
    SLOT_LOCKS.mkdir(exist_ok=True)
    with contextlib.suppress(PermissionError):
        SLOT_LOCKS.chmod(0o1777)  # shared by every user's runs on the machine
    for block in range(BLOCKS):
        # read-only: a lock file another user's run created is still ours to lock (flock needs no write access)
        handle = os.fdopen(os.open(SLOT_LOCKS / f"block-{block}.lock", os.O_RDONLY | os.O_CREAT, 0o644))
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        os.register_at_fork(after_in_child=handle.close)  # a forked worker that outlives this run holds no block
        _HELD.add(block * SLOTS_PER_BLOCK)
        try:
            yield block * SLOTS_PER_BLOCK
        finally:
            _HELD.discard(block * SLOTS_PER_BLOCK)
            handle.close()
        return
    raise SandboxUnavailable(f"all {BLOCKS} blocks of sandbox slots are held by other grading runs on this machine")


def command(job_dir: Path, argv: list[str], slot: int, limits: Limits, isolate: bool = True) -> list[str]:
    """The full bwrap command line for one run (``isolate=False``: argv itself, rlimits only)."""
    if not isolate:
        return argv
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    cmd = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
           "--die-with-parent", "--new-session",
           "--proc", "/proc", "--dev", "/dev",
           "--perms", "1777", "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm",
           "--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp", *_mounts(),
           "--ro-bind", str(job_dir), JOB_MOUNT, "--chdir", "/tmp", *_environment()]
    if os.geteuid() == 0:
        uid = str(UID_BASE + slot)
        cmd += ["--", shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}",
                "--clear-groups", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"]
    else:
        cmd += ["--unshare-user", "--cap-drop", "ALL", "--"]
    return cmd + argv


def _set_limits(limits: Limits, processes: int) -> None:
    """preexec_fn: rlimits inherited by bwrap and everything it starts; the child dies with its grader."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: a killed worker leaves no orphan
    for name, value in ((resource.RLIMIT_CPU, limits.cpu_s), (resource.RLIMIT_AS, limits.memory_bytes),
                        (resource.RLIMIT_NPROC, processes), (resource.RLIMIT_NOFILE, limits.open_files),
                        (resource.RLIMIT_FSIZE, limits.file_bytes), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(name, (value, value))


def _pids_of(uid: int):
    """Process ids whose real uid is ``uid`` (processes that vanish meanwhile are skipped)."""
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            if f"\nUid:\t{uid}\t" in status.read_text():
                yield int(status.parent.name)
        except (OSError, ValueError):
            continue


def _drain(stream, cap: int, keep_tail: bool, sink: list, on_overflow=None) -> None:
    """Read a pipe to EOF, keeping at most ``cap`` bytes (the head, or the tail)."""
    kept, truncated = bytearray(), False
    while chunk := stream.read(65536):
        kept += chunk
        if len(kept) > cap:
            truncated = True
            kept = kept[-cap:] if keep_tail else kept[:cap]
            if on_overflow is not None:  # no need to wait for the deadline: stop the run now
                on_overflow()
                on_overflow = None
    sink.extend([bytes(kept), truncated])


def run(job_dir: Path, argv: list[str], *, slot: int | None = None, limits: Limits = Limits(),
        isolate: bool = True) -> RunResult:
    """Run ``argv`` in a fresh sandbox with ``job_dir`` mounted read-only at /job.

    ``isolate=False`` runs it as a plain child process with the same rlimits and deadline but
    NO namespaces or filesystem isolation; only for machines where bubblewrap cannot run.

    The program sends its results through an inherited pipe: every ``{fd}`` in ``argv`` is
    replaced by that pipe's file descriptor number. Its stdout is discarded and the tail of
    its stderr is kept in ``RunResult.log``. ``slot``: a worker slot the caller holds (see
    ``claim_slots``); without one, the run claims its own."""
    if slot is None:
        with claim_slots(1) as slot:
            return run(job_dir, argv, slot=slot, limits=limits, isolate=isolate)
    if slot - slot % SLOTS_PER_BLOCK not in _HELD:  # its uid may be another run's: cleaning up would kill that run
        raise ValueError(f"sandbox slot {slot} is not held by this grading run: claim it with claim_slots()")
    read_end, write_end = os.pipe()
    argv = [a.replace("{fd}", str(write_end)) for a in argv]
    start = time.monotonic()
    processes = limits.processes
    if os.geteuid() != 0:  # the count is per real uid, which the sandbox shares with its user here
        processes += sum(1 for _ in _pids_of(os.getuid()))
    env = None if isolate else {**os.environ, **STUDENT_ENV, **_course_path()}  # bwrap sets the sandbox's own
    proc = subprocess.Popen(command(job_dir, argv, slot, limits, isolate), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=(write_end,),
                            preexec_fn=lambda: _set_limits(limits, processes), start_new_session=True, env=env)
    os.close(write_end)
    output, log = [], []
    overflow = lambda: _kill_group(proc, wait=False)  # noqa: E731
    readers = [threading.Thread(target=_drain,
                                args=(os.fdopen(read_end, "rb"), limits.output_bytes, False, output, overflow)),
               threading.Thread(target=_drain, args=(proc.stderr, limits.log_bytes, True, log))]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        proc.wait(timeout=limits.wall_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        _kill_group(proc)
    for reader in readers:
        reader.join(timeout=10)
    if isolate and os.geteuid() == 0:
        _kill_uid(UID_BASE + slot)
    return RunResult(None if timed_out else proc.returncode, timed_out,
                     output[0] if output else b"", bool(output and output[1]),
                     (log[0] if log else b"").decode("utf-8", "replace"), time.monotonic() - start)


def _kill_group(proc: subprocess.Popen, wait: bool = True) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if wait:
        proc.wait()


def _kill_uid(uid: int, spare: set[int] = frozenset()) -> None:
    """Belt and braces: nothing may keep running as the slot's uid once its run is over (but ``spare``)."""
    for pid in set(_pids_of(uid)) - spare:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue


class WarmUnavailable(RuntimeError):
    """A warm sandbox could not start, or stopped answering: grade in a cold one instead."""


WARM_JOBS = 200   # a warm sandbox retires after this many jobs (its own CPU-time limit keeps counting)
WARM_START_S = 120.0
WARM_MARGIN_S = 15.0  # past a job's deadline, the time the warm sandbox has to say how its child ended


class WarmSandbox:
    """One sandbox kept running for a grading worker (``grader/zygote.py`` inside): the course's
    runtime is imported once, and each job runs in a child forked from it that isolates itself in
    new namespaces before any student code runs (see the zygote's docstring). ``run`` returns what
    ``sandbox.run`` returns for the same job. Same mounts, environment, uid and rlimits as a cold
    sandbox; the slot's processes other than the warm ones are killed after every job."""

    def __init__(self, files: list[Path], preload: list[str], slot: int, limits: Limits):
        if slot - slot % SLOTS_PER_BLOCK not in _HELD:
            raise ValueError(f"sandbox slot {slot} is not held by this grading run: claim it with claim_slots()")
        self.slot, self.limits, self.jobs, self.owner = slot, limits, 0, os.getpid()
        self.dir = Path(tempfile.mkdtemp(prefix="warm-sandbox-"))  # its /job, only until it is ready
        for path in files:
            shutil.copy(path, self.dir / path.name)
            (self.dir / path.name).chmod(0o644)
        self.dir.chmod(0o755)
        self.sock, inside = socket.socketpair()
        config = json.dumps({"preload": preload, "tmp_bytes": limits.tmp_bytes, "shm_bytes": limits.shm_bytes})
        argv = [sys.executable, f"{JOB_MOUNT}/zygote.py", str(inside.fileno()), config]
        processes = limits.processes + (0 if os.geteuid() == 0 else sum(1 for _ in _pids_of(os.getuid())))
        self.proc = subprocess.Popen(command(self.dir, argv, slot, limits), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=(inside.fileno(),),
                                     preexec_fn=lambda: _set_limits(limits, processes), start_new_session=True)
        inside.close()
        self.log: list = []
        threading.Thread(target=_drain, args=(self.proc.stderr, limits.log_bytes, True, self.log), daemon=True).start()
        reply = self._reply(WARM_START_S)
        shutil.rmtree(self.dir, ignore_errors=True)  # read and imported by now; nothing is left to clean up
        if not reply.get("ready"):
            self.close()
            raise WarmUnavailable(f"a warm sandbox cannot isolate its children here: {reply.get('reason')}")
        self.warm_pids = set(_pids_of(UID_BASE + slot)) if os.geteuid() == 0 else set()

    def alive(self) -> bool:
        return self.proc.poll() is None and self.jobs < WARM_JOBS and os.getpid() == self.owner

    def run(self, job: dict, data: bytes) -> RunResult:
        """Run one job (the runner's ``run_job`` arguments, plus ``wall_s``) in a fresh child."""
        start = time.monotonic()
        self.jobs += 1
        results, stderr = os.pipe(), os.pipe()
        body = json.dumps({**job, "wall_s": self.limits.wall_s}).encode()
        try:
            socket.send_fds(self.sock, [HEADER.pack(b"J", len(body), len(data))], [results[1], stderr[1]])
            self.sock.sendall(body + data)
        except OSError as exc:
            self.close()
            raise WarmUnavailable(f"the warm sandbox stopped taking jobs ({exc})") from None
        finally:
            os.close(results[1])
            os.close(stderr[1])
        output, log = [], []
        readers = [threading.Thread(target=_drain, args=(os.fdopen(results[0], "rb"), self.limits.output_bytes,
                                                         False, output, self._stop_child)),
                   threading.Thread(target=_drain, args=(os.fdopen(stderr[0], "rb"), self.limits.log_bytes, True, log))]
        for reader in readers:
            reader.start()
        ended = self._reply(self.limits.wall_s + WARM_MARGIN_S)
        if "status" not in ended:
            self.close()
        for reader in readers:
            reader.join(timeout=10)
        if os.geteuid() == 0:
            _kill_uid(UID_BASE + self.slot, spare=self.warm_pids)
        if "status" not in ended:
            raise WarmUnavailable(f"the warm sandbox stopped answering ({ended.get('reason')})")
        return RunResult(None if ended["timed_out"] else ended["status"], ended["timed_out"],
                         output[0] if output else b"", bool(output and output[1]),
                         (log[0] if log else b"").decode("utf-8", "replace"), time.monotonic() - start)

    def _stop_child(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.sendall(b"K")

    def _reply(self, seconds: float) -> dict:
        """The warm sandbox's next line, or {"reason": why none came}."""
        self.sock.settimeout(seconds)
        line = b""
        try:
            while not line.endswith(b"\n"):
                chunk = self.sock.recv(4096)
                if not chunk:
                    return {"reason": f"it ended; its log: {self._log()}"}
                line += chunk
            return json.loads(line)
        except TimeoutError:
            return {"reason": f"no answer within {seconds:.0f} s"}
        except (OSError, ValueError) as exc:
            return {"reason": str(exc)}

    def _log(self) -> str:
        time.sleep(0.1)  # the reader of its stderr reaches the end a moment after the process does
        return (self.log[0] if self.log else b"").decode("utf-8", "replace").strip()[-500:] or "(empty)"

    def close(self) -> None:
        """End it (a forked copy of this object, in another process, leaves it alone)."""
        if os.getpid() != self.owner:
            return
        self.sock.close()
        _kill_group(self.proc)
        if os.geteuid() == 0:
            _kill_uid(UID_BASE + self.slot)


@lru_cache(maxsize=1)
def probe() -> str | None:
    """None when sandboxing works here, else the reason it does not."""
    import tempfile

    with tempfile.TemporaryDirectory() as job:
        try:
            result = run(Path(job), [sys.executable, "-c", "import os; os.write({fd}, b'ok')"],
                         limits=Limits(wall_s=60))
        except (SandboxUnavailable, OSError) as exc:
            return str(exc)
    if result.output != b"ok":
        return (f"bubblewrap could not start a sandbox (exit {result.returncode}): {result.log.strip()[-500:]}"
                + userns_hint(result.log))
    return None


USERNS_HINT = (". Grading as an ordinary user needs unprivileged user namespaces, which this machine forbids: "
               "enable them (`sysctl -w kernel.unprivileged_userns_clone=1` on Debian, "
               "`sysctl -w user.max_user_namespaces=15000` where it is 0, and on Ubuntu 24.04 "
               "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`; in a container, "
               "`--security-opt seccomp=unconfined --security-opt apparmor=unconfined`), or grade as root")


def userns_hint(log: str) -> str:
    """What to enable, when bubblewrap failed because an ordinary user may not create namespaces."""
    signs = ("uid map", "new namespace", "user namespace", "Operation not permitted", "Permission denied")
    return USERNS_HINT if os.geteuid() != 0 and any(sign in log for sign in signs) else ""
