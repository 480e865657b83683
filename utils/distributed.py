"""Helpers for notebook 10 (distributed training): start real process groups from a notebook.

A notebook cannot be one of the processes of a process group, and a function defined in a
notebook cannot be handed to a *spawned* process (the new interpreter cannot import it). The
course's ways out:

- ``Ranks``: a ``torchrun`` job (``python -m torch.distributed.run``, what a user starts for real
  training) kept running beside the notebook. Its processes run this module's ``serve`` loop: each
  waits for the functions the notebook sends (``Ranks.run(fn, *args)``: the function's source, and
  the imports and notebook functions it uses), runs them and sends back what they return. So each
  lesson's code sits in an ordinary cell, and its result shows right under it, from one launch.
- ``run_ranks``: *fork* the current process ``world_size`` times and join the copies in one
  gloo process group on the loopback interface. Forked children inherit everything defined so
  far, notebook functions included, so small checks (the exercises' self-tests) can run a
  function on real ranks. Fork exists on Linux and macOS, not on Windows.

Below those, the setup around notebook 10's lessons: data, twin models, and ``compare``, the
course's ``bench.compare`` inside a process group (rank 0 measures, the others keep in step).
"""
from __future__ import annotations

import argparse
import ast
import copy
import dataclasses
import dis
import inspect
import io
import json
import linecache
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
import types
import weakref
from datetime import timedelta
from pathlib import Path
from typing import Callable

import torch
import torch.distributed as dist
from torch import nn

from . import bench
from .priority import share_nice
from .present import Result
from .records import Record

__all__ = ["Lockstep", "RankError", "Ranks", "card", "classification_batch", "compare", "cpu_group",
           "free_port", "gradient_gap", "loopback_interface", "mlp", "rank_device", "regression_batch",
           "rank_gap", "run_ranks", "serve", "shard", "shifted_shards", "shipped_source", "torchrun_command",
           "twin_models", "weight_change", "whole", "worker_env"]

PARENT_ENV = "COURSE_RANKS_PARENT"   # the notebook's process id: ranks whose notebook is gone leave
POLL_S = 0.005                       # how often a waiting rank, and the notebook, look for a new file
IDLE_S = 3600.0                      # a rank that got no work for this long leaves


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


def torchrun_command(script, *args, nproc: int = 2, port: int | None = None, module: bool = False) -> list[str]:
    """``python -m torch.distributed.run`` (what the ``torchrun`` command runs) for one machine:
    ``nproc`` processes, the rendezvous on 127.0.0.1 at ``port`` (a free one by default).
    ``module``: ``script`` names a module (``torchrun -m package.module``), not a file."""
    return [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}", "--nnodes=1",
            "--master-addr=127.0.0.1", f"--master-port={port or free_port()}", *(["-m"] if module else []),
            str(script), *map(str, args)]


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
            dist.barrier()  # rank 0 serves the group's store: no rank leaves while another may still use it
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


# ---------------------------------------------------------------- Ranks: a torchrun job beside the notebook

def _write_json(path: Path, value) -> None:
    """Write ``value`` as JSON so that a reader never sees half a file (a rename is atomic)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(value, default=_plain), encoding="utf-8")
    os.replace(partial, path)


def _plain(value):
    """JSON for what a rank may return beside plain data: tensors as lists, devices and dtypes as text."""
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, (torch.device, torch.dtype)):
        return str(value)
    raise TypeError(f"a {type(value).__name__} is not plain data: return numbers, strings, lists, dicts or tensors")


def _global_names(fn: types.FunctionType) -> list[str]:
    """The global names ``fn`` reads: in its body (and nested functions), its decorators and its
    default values, in order of appearance."""
    names: dict[str, None] = {}

    def walk(code: types.CodeType) -> None:
        for instruction in dis.get_instructions(code):
            if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                names[instruction.argval] = None
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                walk(const)
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    definition = tree.body[0]
    for node in [*definition.decorator_list, *definition.args.defaults, *definition.args.kw_defaults]:
        for name in ast.walk(node) if node is not None else ():
            if isinstance(name, ast.Name):
                names[name.id] = None
    walk(fn.__code__)
    return list(names)


def _literal(value) -> bool:
    try:
        return ast.literal_eval(repr(value)) == value
    except (ValueError, SyntaxError, TypeError, RecursionError):
        return False


def shipped_source(fn: types.FunctionType) -> str:
    """Python source that defines ``fn`` in a fresh interpreter: the imports of the modules, classes
    and functions it uses, the plain constants it reads, and the source of the notebook functions it
    calls (recursively). Anything else (a tensor, a model) cannot travel: pass it as an argument, or
    build it inside the function."""
    imports: dict[str, None] = {}
    defined: dict[str, str] = {}

    def add(f: types.FunctionType) -> None:
        f = inspect.unwrap(f)                       # a decorated function: the one its source defines
        if f.__name__ in defined:
            return
        defined[f.__name__] = ""                    # a placeholder: recursion stops here
        for name in _global_names(f):
            if name not in f.__globals__ or name == f.__name__:
                continue                            # a builtin, or the function itself
            value = f.__globals__[name]
            if isinstance(value, types.ModuleType):
                imports[f"import {value.__name__} as {name}" if value.__name__ != name else f"import {name}"] = None
            elif isinstance(value, types.FunctionType) and inspect.unwrap(value).__module__ == f.__module__:
                add(value)                          # another function of the notebook
            elif getattr(value, "__module__", None) not in (None, "__main__") and isinstance(
                    value, (type, types.FunctionType, types.BuiltinFunctionType)) and "." not in value.__qualname__:
                imports[f"from {value.__module__} import {value.__qualname__}"
                        + (f" as {name}" if name != value.__qualname__ else "")] = None
            elif _literal(value):
                imports[f"{name} = {value!r}"] = None
            else:
                raise TypeError(f"{f.__name__} uses {name!r}, a {type(value).__name__} of the notebook, which "
                                f"cannot be sent to the ranks: build it inside the function or pass it as an argument")
        source = textwrap.dedent(inspect.getsource(f))
        defined.pop(f.__name__)                     # after what it calls: definitions in dependency order
        defined[f.__name__] = source
    add(fn)
    return "\n".join(imports) + "\n\n\n" + "\n\n".join(defined.values())


class Ranks:
    """A ``torchrun`` job of ``nproc`` processes on this machine, kept running beside the notebook.

    ``run(fn, *args)`` sends ``fn`` (see ``shipped_source``) to every rank, which calls
    ``fn(*args)`` (JSON arguments) and sends back what it returns; ``run`` returns each rank's
    result in rank order, or raises ``RankError`` with what the ranks reported. The first function a
    notebook sends joins the process group (``dist.init_process_group``); later ones use it. The
    job is launched in the measuring mode of this process (``--quick`` in QUICK mode), with
    ``worker_env(threads)``; ``stop`` ends it (so does the end of this process)."""

    def __init__(self, nproc: int = 2, *, threads: int = 1, timeout: float = 600.0):
        self.nproc, self.timeout, self._jobs = nproc, timeout, 0
        self.folder = Path(tempfile.mkdtemp(prefix="course10-"))
        self.command = torchrun_command(__name__, "serve", self.folder, *(["--quick"] if bench.is_quick() else []),
                                        nproc=nproc, module=True)
        self._log = open(self.folder / "torchrun.log", "wb")
        self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=self._log,
                                        stderr=subprocess.STDOUT, start_new_session=True,
                                        env={**os.environ, **worker_env(threads), PARENT_ENV: str(os.getpid())})
        share_nice(self.process.pid)  # the ranks' session: this process's nice, not 0
        self._finalizer = weakref.finalize(self, _end_job, self.process, self.folder, self._log, 0.0)

    def run(self, fn: Callable, *args, timeout: float | None = None) -> list:
        """``fn(*args)`` on every rank; their results, in rank order."""
        if self.process.poll() is not None:
            raise RankError(f"the ranks have stopped (exit code {self.process.returncode}): start new Ranks\n"
                            f"{self.log_tail()}")
        job, self._jobs = self._jobs, self._jobs + 1
        _write_json(self.folder / f"job-{job}.json", {"source": shipped_source(fn), "call": fn.__name__,
                                                      "args": list(args)})
        reports = self._collect(job, timeout or self.timeout)
        failed = [f"rank {rank}: {r['error']}" for rank, r in enumerate(reports) if r is not None and not r["ok"]]
        waiting = [f"rank {rank}: no answer" for rank, r in enumerate(reports) if r is None]
        if waiting:
            self.stop(wait=0.0)          # a rank that waits in a collective for a failed one never returns
        if failed or waiting:
            raise RankError(f"{fn.__name__} on the ranks:\n" + "\n".join(failed + waiting)
                            + ("\nThe ranks were stopped: start new Ranks." if waiting else ""))
        return [r["result"] for r in reports]

    def _collect(self, job: int, timeout: float) -> list:
        reports: list = [None] * self.nproc
        deadline = time.monotonic() + timeout
        while None in reports:
            for rank in range(self.nproc):
                path = self.folder / f"result-{job}-{rank}.json"
                if reports[rank] is None and path.exists():
                    reports[rank] = json.loads(path.read_text(encoding="utf-8"))
                    if not reports[rank]["ok"]:      # the others may wait for it in a collective: a grace period
                        deadline = min(deadline, time.monotonic() + 10.0)
            if None not in reports:
                break
            if self.process.poll() is not None:
                raise RankError(f"torchrun exited with code {self.process.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                return reports
            time.sleep(POLL_S)
        return reports

    def log_tail(self, chars: int = 4000) -> str:
        """The end of what torchrun and the ranks printed."""
        self._log.flush()
        return (self.folder / "torchrun.log").read_text(encoding="utf-8", errors="replace")[-chars:]

    def stop(self, wait: float = 30.0) -> int | None:
        """Tell the ranks to leave, wait up to ``wait`` seconds for torchrun to exit, then end it and
        remove the job's folder; returns torchrun's exit code."""
        if not self._finalizer.alive:
            return self.process.returncode
        if self.process.poll() is None and wait:
            _write_json(self.folder / f"job-{self._jobs}.json", {"stop": True})
        self._finalizer.detach()
        return _end_job(self.process, self.folder, self._log, wait)

    def __repr__(self) -> str:
        state = "running" if self.process.poll() is None else f"stopped ({self.process.returncode})"
        return f"Ranks({self.nproc} processes, {state})"


def _end_job(process: subprocess.Popen, folder: Path, log, wait: float) -> int | None:
    try:
        process.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        pass
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)   # torchrun and its ranks: the session it started
        except (ProcessLookupError, PermissionError):
            process.kill()
        process.wait()
    log.close()
    shutil.rmtree(folder, ignore_errors=True)
    return process.returncode


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _run_job(spec: dict) -> dict:
    """Define and call the function a job carries; what it returned, or the error and where it arose."""
    filename = f"<notebook function {spec['call']}>"
    linecache.cache[filename] = (len(spec["source"]), None, spec["source"].splitlines(True), filename)
    try:
        namespace = {"__name__": "__notebook__"}
        exec(compile(spec["source"], filename, "exec"), namespace)
        result = namespace[spec["call"]](*spec["args"])
        json.dumps(result, default=_plain)         # plain data, or the error says what is not
        return {"ok": True, "result": result}
    except BaseException as exc:  # anything the function raises is reported to the notebook
        frames = traceback.extract_tb(exc.__traceback__)
        where = next((f"{f.name}, line {f.lineno}: {f.line}" for f in reversed(frames) if f.filename == filename), "")
        first_line = (str(exc).strip().splitlines() or [""])[0]
        return {"ok": False, "error": f"{type(exc).__name__}: {first_line}"[:600] + (f" (in {where})" if where else "")}


def serve(folder: Path, quick: bool = False) -> None:
    """A rank's loop (``python -m utils.distributed serve FOLDER`` under torchrun): run each job the
    notebook writes to ``FOLDER/job-<n>.json``, write ``result-<n>-<rank>.json``, until a stop job,
    the notebook's end, or an hour without work; then leave the process group and exit."""
    bench.configure(quick)
    rank, parent = int(os.environ["RANK"]), int(os.environ.get(PARENT_ENV, "0"))
    job, idle_since, checked = 0, time.monotonic(), time.monotonic()
    try:
        while True:
            path = folder / f"job-{job}.json"
            if not path.exists():
                now = time.monotonic()
                if now - idle_since > IDLE_S or (parent and now - checked > 1.0 and not _alive(parent)):
                    break
                checked = now if now - checked > 1.0 else checked
                time.sleep(POLL_S)
                continue
            spec = json.loads(path.read_text(encoding="utf-8"))
            if spec.get("stop"):
                break
            _write_json(folder / f"result-{job}-{rank}.json", _run_job(spec))
            job, idle_since = job + 1, time.monotonic()
        if dist.is_initialized():
            dist.destroy_process_group()
    finally:
        # Leave without Python's shutdown: the gloo group a DDP model keeps alive after
        # destroy_process_group() can abort a finished rank at shutdown ("terminate called without
        # an active exception"), and torchrun would report the job failed. Everything is written.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


# ---------------------------------------------------------------- notebook 10: setup around the lessons
# The functions a notebook sends to its Ranks call these on every rank.

def rank_device() -> torch.device:
    """This rank's device: its GPU (``cuda:LOCAL_RANK``) under NCCL, the CPU under gloo."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")


_cpu_groups: dict = {}


def cpu_group():
    """A process group for CPU tensors: the default group under gloo; under NCCL a gloo group of every
    rank, created on the first call (a collective: every rank makes the same calls)."""
    if dist.get_backend() == "gloo":
        return dist.group.WORLD
    key = id(dist.group.WORLD)
    if key not in _cpu_groups:
        _cpu_groups[key] = dist.new_group(backend="gloo")
    return _cpu_groups[key]


def shard(rows_per_rank: list[int], rank: int) -> slice:
    """Rank ``rank``'s consecutive slice of a global batch split into ``rows_per_rank``."""
    start = sum(rows_per_rank[:rank])
    return slice(start, start + rows_per_rank[rank])


def shifted_shards(device, per_rank: int = 8, channels: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    """(this rank's shard, the whole global batch): the same seeded data on every rank, with rank
    r's rows shifted by 2r (as with data sorted by class), so the ranks' statistics differ."""
    rank, world = dist.get_rank(), dist.get_world_size()
    full = torch.randn(world * per_rank, channels, generator=torch.Generator().manual_seed(0))
    full += 2.0 * torch.arange(world).repeat_interleave(per_rank)[:, None]
    full = full.to(device)
    return full[shard([per_rank] * world, rank)], full


def rank_gap(bn: nn.Module) -> dict[str, str]:
    """How far apart the ranks' copies of a BatchNorm layer are: the largest difference between any two
    ranks, for its weight and its running mean (a collective: every rank calls it)."""
    mine = torch.cat([bn.weight.detach(), bn.running_mean]).cpu()
    every = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(every, mine, group=cpu_group())
    gap = (torch.stack(every).max(0).values - torch.stack(every).min(0).values)
    half = len(mine) // 2
    return {"weight": f"{gap[:half].max().item():.3g}", "running_mean": f"{gap[half:].max().item():.3g}"}


def regression_batch(rows: int, device, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """A seeded (inputs with 6 features, one target) batch, the same on every rank."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, 6, generator=g).to(device), torch.randn(rows, 1, generator=g).to(device)


def twin_models(device, seed: int = 0) -> tuple[nn.Module, nn.Module]:
    """A small MLP and an independent copy with the same weights (the one-process reference)."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    return model, copy.deepcopy(model)


def gradient_gap(model: nn.Module, single: nn.Module) -> dict[str, str]:
    """How far the DDP model's gradients are from the one-process model's: the largest difference of
    any gradient entry, and the ratio of their norms (1: the same size)."""
    ddp_grads = torch.cat([p.grad.flatten() for p in model.parameters()])
    one_grads = torch.cat([p.grad.flatten() for p in single.parameters()])
    return {"grad gap": f"{(ddp_grads - one_grads).abs().max().item():.2g}",
            "norm ratio": f"{(ddp_grads.norm() / one_grads.norm()).item():.3g}"}


def whole(p: torch.Tensor) -> torch.Tensor:
    """A parameter's full value, also for FSDP's sharded (DTensor) parameters (a collective then)."""
    return (p.full_tensor() if hasattr(p, "full_tensor") else p).detach().clone()


def weight_change(model: nn.Module, step: Callable[[], object], steps: int = 3) -> str:
    """Run ``step`` ``steps`` times; the largest change of any weight of ``model``, as text."""
    start = [whole(p) for p in model.parameters()]
    for _ in range(steps):
        step()
    return f"{max((whole(p) - s).abs().max().item() for p, s in zip(model.parameters(), start)):.3g}"


def mlp(width: int, classes: int = 10) -> nn.Sequential:
    """Three linear layers with ReLUs: the model of the T095 timing."""
    return nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, classes))


def classification_batch(rows: int, width: int, classes: int = 10, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    return torch.randn(rows, width), torch.randint(0, classes, (rows,))


class Lockstep:
    """Rank 0 calls the variants of a comparison; before each call it tells the other ranks which one
    (a broadcast of its number; 0: stop), and they run the same variant, so that the collectives
    inside it have partners."""

    def __init__(self, steps: list[Callable[[], object]], group=None):
        self.steps, self.group = steps, group
        self.command = torch.zeros(1, dtype=torch.int64)

    def lead(self, index: int) -> Callable[[], object]:
        """Rank 0's version of variant ``index``: announce it, then run it."""
        def call():
            self.command.fill_(index + 1)
            dist.broadcast(self.command, 0, group=self.group)
            return self.steps[index]()
        return call

    def follow(self) -> None:
        """The other ranks: run each variant rank 0 announces, until it says stop."""
        while True:
            dist.broadcast(self.command, 0, group=self.group)
            if self.command.item() == 0:
                return
            self.steps[self.command.item() - 1]()

    def stop(self) -> None:
        self.command.fill_(0)
        dist.broadcast(self.command, 0, group=self.group)


@bench.takes_options
def compare(tip: str, *variants, alone: tuple[str, ...] = (),
            options: bench.Options | None = None) -> list[dict] | None:
    """``bench.compare`` in a process group, called on every rank with the same variants: rank 0
    measures and records, and the other ranks run each variant whenever rank 0 does (``Lockstep``),
    except the variants named in ``alone``, which rank 0 runs by itself. The device is the rank's
    (``rank_device``) and, on the CPU, the comparison is a host-side one (``host=True``: gloo runs on
    the CPU whatever GPUs the machine has); ``options`` are ``bench.compare``'s, less the device.
    Returns rank 0's records as plain dicts (``card`` shows them in the notebook), None on the
    other ranks."""
    options = options or bench.Options()
    if options.device != bench.Options.device:
        raise ValueError(f"distributed.compare runs on each rank's device (rank_device()), not on "
                         f"options.device={options.device!r}: leave it out (host=True runs it on the CPU)")
    device = rank_device()
    options = dataclasses.replace(options, device=device, host=options.host or device.type == "cpu")
    lockstep = Lockstep([variant[1] for variant in variants], cpu_group())
    if dist.get_rank() != 0:
        lockstep.follow()
        return None
    led = [(label, fn if label in alone else lockstep.lead(i), *extra)
           for i, (label, fn, *extra) in enumerate(variants)]
    try:
        result = bench.compare(tip, *led, options=options)
    finally:
        lockstep.stop()
    return [dataclasses.asdict(record) for record in getattr(result, "records", None) or result.to_records()]


def card(results: list) -> Result:
    """The card of a comparison that ran on the ranks (``compare``), from the records rank 0 wrote."""
    return Result.recorded([Record(**row) for row in next(r for r in results if r is not None)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m utils.distributed",
                                     description="A rank of a Ranks job (torchrun starts it): serve FOLDER.")
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--quick", action="store_true", help="QUICK mode: short timings")
    args = parser.parse_args(argv)
    serve(args.folder, args.quick)


if __name__ == "__main__":
    main()
