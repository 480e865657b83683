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

Below those, the setup around notebook 10's lessons: data, twin models, the lockstep timing of a
DDP step, and the readers that turn what the ranks wrote into tables.
"""
from __future__ import annotations

import copy
import dataclasses
import io
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import torch
import torch.distributed as dist
from torch import nn

from .tables import attempt

if TYPE_CHECKING:  # a type only: the grader's sandbox imports this module and needs none of the toolkit
    from .comparison import Comparison

__all__ = ["Lockstep", "RankError", "SGDStep", "across_ranks", "as_records", "attempt", "classification_batch",
           "cpu_group", "epoch_orders", "free_port", "gradient_gap", "loopback_interface", "mlp", "rank_results",
           "regression_batch", "rounded", "run_ranks", "shard", "shifted_shards", "state", "torchrun_command",
           "train_and_measure", "twin_models", "whole", "worker_env"]


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


# ---------------------------------------------------------------- notebook 10: setup around the lessons
# The lesson's training script (written by the notebook, run by torchrun) imports these; the
# notebook reads what the ranks wrote with ``rank_results`` and shows it with the table helpers.

def rank_results(launch: subprocess.CompletedProcess, out_dir: Path, world_size: int) -> list[dict]:
    """What each rank wrote to ``out_dir/rank<r>.json``, in rank order; raises with the end of
    torchrun's stderr when the launch failed."""
    if launch.returncode != 0:
        raise RankError(f"torchrun exited with code {launch.returncode}:\n{launch.stderr[-4000:]}")
    return [json.loads((Path(out_dir) / f"rank{rank}.json").read_text()) for rank in range(world_size)]


def cpu_group():
    """A process group for CPU tensors: the default group under gloo, a new gloo group under NCCL."""
    return dist.group.WORLD if dist.get_backend() == "gloo" else dist.new_group(backend="gloo")


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


def state(bn: nn.Module) -> dict[str, list[float]]:
    """A BatchNorm layer's weight and running mean, as lists."""
    return {"weight": bn.weight.tolist(), "running_mean": bn.running_mean.tolist()}


def rounded(values: list[float], digits: int = 4) -> list[float]:
    return [round(v, digits) for v in values]


def across_ranks(per_rank: list[dict], stats: tuple[str, ...] = ("weight", "running_mean"), first: int = 2) -> list[dict]:
    """One row per state (the keys of each rank's dict, in order): the first ``first`` values of each
    stat on every rank, and the largest difference between the ranks."""
    rows = []
    for key in per_rank[0]:
        row = {"state": key}
        for stat in stats:
            values = torch.tensor([r[key][stat] for r in per_rank])
            row.update({f"{stat}[:{first}], rank {k}": rounded(v[:first].tolist()) for k, v in enumerate(values)})
            row[f"{stat}: largest difference"] = f"{(values.max(0).values - values.min(0).values).max().item():.3g}"
        rows.append(row)
    return rows


def epoch_orders(sampler_rows: list[dict], set_epoch: bool) -> list[list[int]]:
    """The indices a rank saw in each epoch, with or without ``set_epoch``."""
    return [row["indices"] for row in sampler_rows if row["set_epoch"] == set_epoch]


def regression_batch(rows: int, device, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """A seeded (inputs with 6 features, one target) batch, the same on every rank."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, 6, generator=g).to(device), torch.randn(rows, 1, generator=g).to(device)


def twin_models(device, seed: int = 0) -> tuple[nn.Module, nn.Module]:
    """A small MLP and an independent copy with the same weights (the one-process reference)."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    return model, copy.deepcopy(model)


def gradient_gap(model: nn.Module, single: nn.Module, lr: float = 0.1) -> dict[str, float]:
    """How far the DDP model's gradients are from the one-process model's, and their weights after
    one plain SGD step on both."""
    ddp_grads = torch.cat([p.grad.flatten() for p in model.parameters()])
    one_grads = torch.cat([p.grad.flatten() for p in single.parameters()])
    with torch.no_grad():
        for p in [*model.parameters(), *single.parameters()]:
            p -= lr * p.grad
    return {"max |grad difference|": (ddp_grads - one_grads).abs().max().item(),
            "grad norm ratio": (ddp_grads.norm() / one_grads.norm()).item(),
            "max |weight difference| after a step": max((p - q).abs().max().item()
                                                        for p, q in zip(model.parameters(), single.parameters()))}


def whole(p: torch.Tensor) -> torch.Tensor:
    """A parameter's full value, also for FSDP's sharded (DTensor) parameters."""
    return (p.full_tensor() if hasattr(p, "full_tensor") else p).detach().clone()


def train_and_measure(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor, steps: int = 3) -> dict:
    """Train ``steps`` steps on ``x`` (loss: mean square of the output); how far the weights moved."""
    start = [whole(p) for p in model.parameters()]
    for _ in range(steps):
        optimizer.zero_grad()
        model(x).square().mean().backward()
        optimizer.step()
    return {"max |weight change| in training": max((whole(p) - s).abs().max().item()
                                                   for p, s in zip(model.parameters(), start))}


def mlp(width: int, classes: int = 10) -> nn.Sequential:
    """Three linear layers with ReLUs: the model of the T095 timing."""
    return nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, classes))


def classification_batch(rows: int, width: int, classes: int = 10, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    return torch.randn(rows, width), torch.randint(0, classes, (rows,))


class SGDStep:
    """One training step of ``model`` on (x, y) with its own SGD optimizer, on ``threads`` intra-op
    threads (given here or per call)."""

    def __init__(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor, threads: int | None = None,
                 lr: float = 0.01):
        self.model, self.x, self.y, self.threads = model, x, y, threads
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr)

    def __call__(self, threads: int | None = None) -> None:
        torch.set_num_threads(threads or self.threads or torch.get_num_threads())
        self.optimizer.zero_grad()
        nn.functional.cross_entropy(self.model(self.x), self.y).backward()
        self.optimizer.step()


class Lockstep:
    """Rank 0 times a step; every other rank runs the same step whenever rank 0 does, so that the
    collectives inside it have partners. Each call is announced by a broadcast command (1: run one
    step, 0: stop)."""

    def __init__(self, group=None):
        self.group = group
        self.command = torch.zeros(1, dtype=torch.int64)

    def lead(self, step: Callable[[], object]) -> Callable[[], object]:
        """Rank 0's version of ``step``: announce it, then run it."""
        def call():
            self.command.fill_(1)
            dist.broadcast(self.command, 0, group=self.group)
            return step()
        return call

    def follow(self, step: Callable[[], object]) -> None:
        """The other ranks: run ``step`` each time rank 0 announces one, until it says stop."""
        while True:
            dist.broadcast(self.command, 0, group=self.group)
            if self.command.item() == 0:
                return None
            step()

    def stop(self) -> None:
        self.command.fill_(0)
        dist.broadcast(self.command, 0, group=self.group)


def as_records(result: Comparison) -> list[dict]:
    """A comparison as plain dicts (the records ``bench.compare`` wrote of it), to travel from a rank
    to the notebook as JSON."""
    return [dataclasses.asdict(record) for record in getattr(result, "records", None) or result.to_records()]
