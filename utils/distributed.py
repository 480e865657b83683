"""Helpers for notebook 10 (distributed training): start real process groups from a notebook.

A notebook cannot be one of the processes of a process group, and a function defined in a
notebook cannot be handed to a *spawned* process (the new interpreter cannot import it). Two
ways out, both used by the course:

- a script file launched with ``torchrun`` (``python -m torch.distributed.run``): what a user
  does for real training; ``torchrun_command`` builds the command line;
- ``run_ranks``: *fork* the current process ``world_size`` times and join the copies in one
  gloo process group on the loopback interface. Forked children inherit everything defined so
  far, notebook functions included, so small checks (the exercises' self-tests) can run a
  function on real ranks. Fork exists on Linux and macOS, not on Windows.
"""
from __future__ import annotations

import io
import multiprocessing
import os
import socket
import sys
import time
from datetime import timedelta
from typing import Callable

import torch

__all__ = ["RankError", "free_port", "loopback_interface", "run_ranks", "torchrun_command", "worker_env"]


class RankError(RuntimeError):
    """A rank raised, crashed or did not finish in time; the message holds what it reported."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (for MASTER_PORT)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loopback_interface() -> str:
    """The loopback interface's name ("lo" on Linux, "lo0" on macOS), for GLOO_SOCKET_IFNAME."""
    try:
        names = [name for _, name in socket.if_nameindex()]
    except (AttributeError, OSError):
        names = []
    return next((name for name in names if name.startswith("lo")), "lo")


def worker_env(threads: int = 1) -> dict[str, str]:
    """Environment for processes of a single-machine gloo group: gloo talks over the loopback
    interface (no hostname lookup, which fails or warns on some machines), and each process
    gets ``threads`` intra-op threads (torchrun would otherwise pick 1 and print a notice)."""
    return {"GLOO_SOCKET_IFNAME": loopback_interface(), "OMP_NUM_THREADS": str(threads)}


def torchrun_command(script, *args, nproc: int = 2, port: int | None = None) -> list[str]:
    """``python -m torch.distributed.run`` (what the ``torchrun`` command runs) for one machine:
    ``nproc`` processes, the rendezvous on 127.0.0.1 at ``port`` (a free one by default)."""
    return [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}", "--nnodes=1",
            "--master-addr=127.0.0.1", f"--master-port={port or free_port()}", str(script), *map(str, args)]


def run_ranks(fn: Callable[[int, int], object], world_size: int = 2, *, timeout: float = 30.0,
              collective_timeout: float = 10.0) -> list:
    """Run ``fn(rank, world_size)`` on ``world_size`` forked processes that form one gloo
    process group (the default group, over 127.0.0.1); return each rank's result in rank order.

    Results travel back with ``torch.save`` and are loaded with ``weights_only=True``: return
    plain data (tensors, numbers, strings, lists, dicts). Raises ``RankError`` with every rank's
    report when a rank raises, dies, or the whole run takes longer than ``timeout`` seconds (a
    collective that waits for a rank that never comes gives up after ``collective_timeout``).
    """
    if "fork" not in multiprocessing.get_all_start_methods():
        raise RankError("run_ranks needs the 'fork' start method (Linux or macOS); on Windows launch a script "
                        "with torchrun instead")
    context = multiprocessing.get_context("fork")
    port = free_port()
    pipes, procs = [], []
    for rank in range(world_size):
        receive, send = context.Pipe(duplex=False)
        proc = context.Process(target=_child, args=(fn, rank, world_size, port, send, collective_timeout),
                               daemon=True)
        proc.start()
        send.close()
        pipes.append(receive)
        procs.append(proc)
    reports: list = [None] * world_size
    deadline = time.monotonic() + timeout
    try:
        for rank, (pipe, proc) in enumerate(zip(pipes, procs)):
            while reports[rank] is None:
                if pipe.poll(0.05):
                    reports[rank] = _receive(pipe, rank)
                elif not proc.is_alive() and not pipe.poll(0):
                    how = f"signal {-proc.exitcode}" if (proc.exitcode or 0) < 0 else f"exit code {proc.exitcode}"
                    reports[rank] = {"ok": False, "error": f"the process died ({how}) without a result"}
                elif time.monotonic() > deadline:
                    raise RankError(f"the ranks did not finish within {timeout:.0f} s; results so far: "
                                    f"{_summary(reports)}")
    finally:
        for proc in procs:
            proc.join(timeout=max(0.0, min(5.0, deadline - time.monotonic())))
            if proc.is_alive():
                proc.kill()
                proc.join()
        for pipe in pipes:
            pipe.close()
    if not all(r["ok"] for r in reports):
        raise RankError(_summary(reports))
    return [r["result"] for r in reports]


def _receive(pipe, rank: int) -> dict:
    try:
        report = torch.load(io.BytesIO(pipe.recv_bytes()), weights_only=True)
    except EOFError:
        return {"ok": False, "error": f"rank {rank} exited without a result"}
    except Exception as exc:  # e.g. an object that weights_only refuses
        return {"ok": False, "error": f"rank {rank} returned something that is not plain data "
                                      f"({type(exc).__name__})"}
    if type(report) is not dict or "ok" not in report:
        return {"ok": False, "error": f"rank {rank} sent an unreadable report"}
    return report


def _summary(reports: list) -> str:
    return "; ".join(f"rank {rank}: " + ("waiting" if r is None else "ok" if r["ok"] else r["error"])
                     for rank, r in enumerate(reports))


def _child(fn, rank: int, world_size: int, port: int, pipe, collective_timeout: float) -> None:
    """One forked rank: join the group, run ``fn``, send the result, leave without cleanup of
    the parent's state (``os._exit``: a forked Jupyter kernel must not run its exit handlers)."""
    code = 0
    try:
        # Silence the rank (Python's output and native libraries'): a forked Jupyter kernel would forward
        # it to the notebook. What matters comes back in the report.
        quiet = os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, 1)
        os.dup2(quiet, 2)
        sys.stdout = sys.stderr = open(quiet, "w", encoding="utf-8")
        os.environ.update(worker_env(threads=1))
        torch.set_num_threads(1)
        import torch.distributed as dist

        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size,
                                timeout=timedelta(seconds=collective_timeout))
        try:
            report = {"ok": True, "result": fn(rank, world_size)}
        finally:
            dist.destroy_process_group()
    except BaseException as exc:  # anything the function raises is reported, never re-raised here
        code = 1
        first_line = (str(exc).strip().splitlines() or [""])[0]
        report = {"ok": False, "error": f"{type(exc).__name__}: {first_line}"[:400]}
    buffer = io.BytesIO()
    try:
        torch.save(report, buffer)
    except Exception as exc:
        code = 1
        buffer = io.BytesIO()
        torch.save({"ok": False, "error": f"the result is not plain data ({type(exc).__name__}: {exc})"[:400]},
                   buffer)
    try:
        pipe.send_bytes(buffer.getvalue())
        pipe.close()
    finally:
        os._exit(code)
