"""Runs INSIDE a warm sandbox: imports torch and the course's setup modules once, then forks a
child per submission. Started by ``sandbox.WarmSandbox`` as

    python zygote.py CONTROL_FD CONFIG_JSON

(CONFIG_JSON: the modules to import, and the sizes of each child's /tmp and /dev/shm.)

What keeps one submission from the next, and from this process:
- the child is a fork: whatever it patches, imports or allocates is its own copy, gone when it ends;
- before any student code runs it enters new user, mount, PID, IPC, network and UTS namespaces,
  mounts fresh size-limited tmpfs on /tmp and /dev/shm (its working directory is /tmp), drops
  every capability, and closes every file descriptor but its own two pipes;
- in its PID namespace this process does not exist: no signal, ``pidfd`` or ``ptrace`` can name
  it; it is also not dumpable, so /proc shows nothing of its memory, files or environment;
- it starts a session of its own, so no process-group signal reaches this process;
- the namespace's init is a small process of ours; when the runner ends it ends, and the kernel
  kills every process left in the namespace (threads die with their process).

The trusted grader sends each job over CONTROL_FD (a Unix socket) with the two pipe ends the
child writes to (results, stderr), and gets back one line: how the child ended. A deadline is
kept here, and the grader keeps its own in case this process stops answering.
"""
import ctypes
import fcntl
import json
import os
import re
import select
import signal
import socket
import struct
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MNT_DETACH = 2, 4, 4096, 16384, 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
HEADER = struct.Struct(">cIQ")   # kind ("J": a job), its JSON's length, its data's length
_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _drop_capabilities() -> None:
    """No capability left in any set: the student's code runs as unprivileged as in a cold sandbox."""
    for cap in range(64):
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)   # fails past the last capability: nothing to drop
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)    # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()                    # effective, permitted, inheritable (x2): empty
    _check(_libc.capset(header, data), "capset")


def _isolate(tmp_bytes: int, shm_bytes: int) -> None:
    """New namespaces for this process and a private /tmp and /dev/shm (the caller then forks the
    namespace's init: a new PID namespace holds the caller's children, not the caller)."""
    uid, gid = os.getuid(), os.getgid()
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)   # (inherited from this process) else /proc/self is root's
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWUTS),
           "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    _loopback_up()
    kept = _mounts_under("/tmp")   # a checkout or venv under /tmp: bubblewrap binds it over the sandbox's /tmp
    _tmpfs("/dev/shm", shm_bytes)
    for i, point in enumerate(kept):   # set aside while /tmp is replaced
        os.mkdir(f"/dev/shm/{i}")
        _bind(point, f"/dev/shm/{i}")
    _tmpfs("/tmp", tmp_bytes)
    for i, point in enumerate(kept):
        os.makedirs(point, exist_ok=True)
        _bind(f"/dev/shm/{i}", point)
        _check(_libc.umount2(f"/dev/shm/{i}".encode(), MNT_DETACH), f"unmount /dev/shm/{i}")
        os.rmdir(f"/dev/shm/{i}")


def _loopback_up() -> None:
    """A new network namespace has only ``lo``, and it is down: bring it up, as bubblewrap does (notebook
    10's probes run real two-process gloo groups over 127.0.0.1)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP))


def _tmpfs(target: str, size: int) -> None:
    _check(_libc.mount(b"tmpfs", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777".encode()),
           f"mount tmpfs on {target}")


def _bind(source: str, target: str) -> None:
    """A recursive bind (read-only stays read-only: bubblewrap's flags are locked in a child namespace)."""
    _check(_libc.mount(os.fsencode(source), os.fsencode(target), None, MS_BIND | MS_REC, None), f"bind {source} on {target}")


def _mounts_under(folder: str) -> list[str]:
    """The outermost mount points strictly inside ``folder``, from /proc/self/mountinfo."""
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        points = sorted({re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), line.split()[4]) for line in f})
    inside = [p for p in points if p.startswith(folder + "/")]
    return [p for p in inside if not any(p.startswith(q + "/") for q in inside)]


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code   # killed by a signal: 128 + its number, as bubblewrap reports


def _child(job: dict, data: bytes, results: int, stderr: int, sizes: dict) -> None:
    """The forked child: isolate, start the namespace's init, which starts the runner. Never returns."""
    import runner   # main() imported it before any child was forked

    try:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)   # the warm sandbox ends, so does this
        os.setsid()   # a session and process group of its own: killpg(0) reaches nothing of the warm one's
        _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)   # /proc/self/autogroup is writable only while dumpable
        runner.keep_nice()   # the new session's scheduling group: the warm sandbox's nice, not 0
        _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        keep = sorted((results, stderr))
        os.closerange(3, keep[0])
        os.closerange(keep[0] + 1, keep[1])
        os.closerange(keep[1] + 1, 1 << 16)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd, to in ((devnull, 0), (devnull, 1), (stderr, 2)):
            os.dup2(fd, to)
        _isolate(sizes["tmp_bytes"], sizes["shm_bytes"])
        _drop_capabilities()
        _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)   # this process and the init: out of the runner's reach
        alive_read, alive_write = os.pipe()   # EOF on it: this process has died
        init = os.fork()
        if init:
            os._exit(_exit_code(os.waitpid(init, 0)[1]))
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)   # the child dies, the namespace dies
        os.close(alive_write)
        if select.select([alive_read], [], [], 0)[0]:   # it died before the line above was in force
            os._exit(137)
        os.chdir("/tmp")
        runner = os.fork()
        if runner == 0:
            os.close(alive_read)
            _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)   # the student's process: /proc/self as in a cold sandbox
            _run(job, data, results)
        os.close(results)
        while True:   # the namespace's init: reap everything; end with the runner
            pid, status = os.wait()
            if pid == runner:
                os._exit(_exit_code(status))
    except BaseException as exc:   # before any student code: the grader reports an environment failure
        os.write(2, f"warm sandbox: the child could not start: {exc}\n".encode())
    os._exit(125)


def _run(job: dict, data: bytes, results: int) -> None:
    import io

    import runner
    import torch

    inputs = torch.load(io.BytesIO(data), weights_only=True) if data else {}
    runner.run_job(job["job"], inputs, job["probes"], results)


def _receive(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _serve_one(sock: socket.socket, job: dict, data: bytes, fds: list[int], sizes: dict) -> None:
    """Fork the job's child, wait for it (the grader may ask to kill it: "K"), report how it ended."""
    results, stderr = fds
    pid = os.fork()
    if pid == 0:
        sock.close()
        _child(job, data, results, stderr, sizes)
    os.close(results)
    os.close(stderr)
    pidfd = os.pidfd_open(pid)
    ready, _, _ = select.select([pidfd, sock], [], [], job["wall_s"])
    timed_out = not ready
    if pidfd not in ready:   # its deadline, or the grader's "K" (its output is over the cap; EOF: the grader is gone)
        if sock in ready:
            _receive(sock, 1)
        os.kill(pid, signal.SIGKILL)
    status = _exit_code(os.waitpid(pid, 0)[1])
    os.close(pidfd)
    sock.sendall(json.dumps({"status": status, "timed_out": timed_out}).encode() + b"\n")


def _self_test(sizes: dict) -> str | None:
    """Whether a child can isolate itself here (nested user namespaces may be forbidden)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            _isolate(sizes["tmp_bytes"], sizes["shm_bytes"])
            _drop_capabilities()
        except BaseException as exc:
            os.write(write_end, str(exc).encode()[:500])
            os._exit(1)
        os._exit(0)
    os.close(write_end)
    reason = os.read(read_end, 600).decode(errors="replace")
    os.close(read_end)
    return None if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0 else reason or "unknown"


def main(control: int, config: dict) -> None:
    sock = socket.socket(fileno=control)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import importlib

    import runner  # imported here, so that every child starts with it
    runner.keep_nice()   # bubblewrap's --new-session gave this process a scheduling group at nice 0
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)   # after keep_nice: it writes a /proc/self file
    import torch

    torch.set_num_threads(1)   # no OpenMP pool before fork(): a child's parallel region would wait for it
    for name in config["preload"]:
        try:
            importlib.import_module(name)
        except Exception:   # not a module (a class imported by name), or a failure the setup cell will report
            pass
    runner.make_shell()
    failure = _self_test(config)
    sock.sendall(json.dumps({"ready": failure is None, "reason": failure}).encode() + b"\n")
    while failure is None:
        message, fds, _, _ = socket.recv_fds(sock, HEADER.size, 2)
        if not message:
            return   # the grader closed the socket: the worker is done
        message = message.lstrip(b"K")   # a stop request that came after its child had ended
        if not message:
            continue
        kind, json_bytes, data_bytes = HEADER.unpack(message + _receive(sock, HEADER.size - len(message)))
        job, data = json.loads(_receive(sock, json_bytes)), _receive(sock, data_bytes)
        if kind != b"J" or len(fds) != 2:
            raise SystemExit(f"warm sandbox: a message it cannot read ({kind!r}, {len(fds)} file descriptors)")
        _serve_one(sock, job, data, fds, config)


if __name__ == "__main__":
    main(int(sys.argv[1]), json.loads(sys.argv[2]))
