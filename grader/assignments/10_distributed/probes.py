"""Probes for 10_distributed (run in the sandbox after grader/probe_helpers.py).

gather_padded runs on REAL process groups: the sandbox's process is forked into 2 or 3 ranks that
join a gloo group over the sandbox's own loopback interface (utils.distributed.run_ranks). Each
rank shifts the tensor the grader chose for it by a random offset, drawn after the fork, so no rank
can know another rank's tensor without communicating; the rank reports its offset and the
trusted check recomputes every expected tensor from its own inputs and the reported offsets.

What ran is recorded, not read from the source: while the answer runs, a profiler (sys.setprofile,
bound when this module loads, before any student code) watches for the code objects of
torch.distributed's collectives and of DistributedSampler, however the answer reached them (an
alias, getattr with a name built at run time, the c10d module, a copy of the sampler's code). For
every tensor gather it keeps what the gather delivered, so the check can see whether the data
travelled padded, in its own dtype, through dist.all_gather / dist.all_gather_into_tensor.
"""
import _thread
import inspect as _inspect
import mmap as _mmap_module
import os
import sys as _sys
import types as _types

try:
    import _posixsubprocess
except ImportError:  # not on Windows
    _posixsubprocess = None

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as _c10d
from torch.utils.data.distributed import DistributedSampler as _DistributedSampler

from utils.distributed import RankError as _RankError
from utils.distributed import run_ranks as _run_ranks

# ---- bound before any student code runs ------------------------------------------------------
_urandom = os.urandom
_mmap = _mmap_module.mmap
_monotonic = __import__("time").monotonic
_setprofile, _getprofile = _sys.setprofile, _sys.getprofile
# Calling any of these while the answer is watched touches the watch (c_call events): the profiler
# itself, or a thread or process where it cannot see (an honest answer never needs one).
_TAMPER = tuple(f for f in (_sys.setprofile, _sys.getprofile, getattr(_sys, "_setprofileallthreads", None),
                            _thread.start_new_thread, getattr(os, "fork", None), getattr(os, "forkpty", None),
                            getattr(os, "posix_spawn", None), getattr(os, "posix_spawnp", None), os.system,
                            getattr(_posixsubprocess, "fork_exec", None))
                if f is not None)
_Tensor = torch.Tensor
_detach, _clone, _contiguous = torch.Tensor.detach, torch.Tensor.clone, torch.Tensor.contiguous
_numel, _equal, _logical_xor, _as_tensor = torch.Tensor.numel, torch.equal, torch.logical_xor, torch.tensor
_default_group = _c10d._get_default_group
_default_generator, _generator_state = torch.default_generator, torch._C.Generator.get_state

_TIMEOUT_S = 30.0      # one whole run of ranks
_COLLECTIVE_S = 6.0    # a collective waiting for a rank that never comes gives up after this
_RETRY_BEFORE_S = 50.0  # a run that failed to start is retried only if it can end this long after the probe began
_KEEP_NUMEL = 4096     # the most elements of a gather's output kept as evidence
_KEEP_CALLS = 64       # the most collective calls recorded per answer call (object collectives: all, by name)

GATHERS = ("all_gather", "all_gather_into_tensor")
OBJECT_COLLECTIVES = ("all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list",
                      "send_object_list", "recv_object_list")
_OTHER_COLLECTIVES = ("_all_gather_base", "all_gather_coalesced", "all_reduce", "all_reduce_coalesced", "broadcast",
                      "reduce", "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base",
                      "all_to_all", "all_to_all_single", "send", "recv", "isend", "irecv", "batch_isend_irecv",
                      "barrier", "monitored_barrier")


def _code_of(fn):
    fn = _inspect.unwrap(fn)
    return getattr(fn, "__code__", None)


_COLLECTIVES = {}
for _name in (*GATHERS, *OBJECT_COLLECTIVES, *_OTHER_COLLECTIVES):
    _code = _code_of(getattr(_c10d, _name, None)) if callable(getattr(_c10d, _name, None)) else None
    if _code is not None:
        _COLLECTIVES[_code] = _name

# DistributedSampler's own code: every method by identity and content, and the two that do the work
# by their bytecode too (an exec'd copy of the source has other code objects but the same bytecode).
_SAMPLER_CODES = {v.__code__ for v in vars(_DistributedSampler).values() if isinstance(v, _types.FunctionType)}
_SAMPLER_BYTECODE = {_DistributedSampler.__iter__.__code__.co_code, _DistributedSampler.__init__.__code__.co_code}


def _copy(t):
    return _contiguous(_clone(_detach(t)))


def _shift(t, offset: int):
    """t shifted by offset: added (numbers), or flipped when offset is odd (bool). Both sides use this."""
    if t.dtype == torch.bool:
        return _logical_xor(t, _as_tensor(bool(offset & 1)))
    return t + _as_tensor(offset, dtype=t.dtype)


def _strided(t):
    """The same values as a non-contiguous view: a copy with the last two dimensions swapped, swapped back."""
    return _contiguous(t.transpose(-1, -2)).transpose(-1, -2)


class _Watch:
    """A profiler that records, while the answer runs: every collective of torch.distributed (name,
    group, whether it ran inside another collective; for gathers the input's dtype and size and what
    they delivered), whether DistributedSampler's code ran, and any attempt to touch the profiler."""

    def __init__(self, given_group=None):
        self.given = given_group
        self.calls, self.pending, self.stack, self.objects = [], [], [], set()
        self.sampler = self.tampered = self.closing = False

    def _group(self, group) -> str:
        if group is not None and group is self.given:
            return "given"
        if group is None or group is _default_group():
            return "default"
        return "other"

    def __call__(self, frame, event, arg):
        try:
            if event == "call":
                code = frame.f_code
                name = _COLLECTIVES.get(code)
                if name is not None:
                    self._enter(frame, name)
                elif code in _SAMPLER_CODES or code.co_code in _SAMPLER_BYTECODE:
                    self.sampler = True
            elif event == "return":
                if self.stack and frame is self.stack[-1][0]:
                    _, record, outputs = self.stack.pop()
                    if outputs is not None and not record.get("async"):
                        record["out"] = self._keep(outputs)
            elif event == "c_call" and not self.closing:
                for f in _TAMPER:
                    if arg is f:
                        self.tampered = True
        except BaseException:  # a profiler that raises is switched off: never let it
            pass

    def _enter(self, frame, name: str) -> None:
        local = frame.f_locals
        record = {"name": name, "nested": bool(self.stack), "group": self._group(local.get("group"))}
        outputs = None
        if name in OBJECT_COLLECTIVES:
            self.objects.add(name)
        if name in GATHERS and len(self.pending) < _KEEP_CALLS:
            if name == "all_gather":
                source, outputs = local.get("tensor"), local.get("tensor_list")
                outputs = list(outputs) if type(outputs) is list else []
            else:
                source, outputs = local.get("input_tensor"), [local.get("output_tensor")]
            if type(source) is _Tensor:
                record.update(dtype=str(source.dtype), numel=int(_numel(source)))
            record["async"] = bool(local.get("async_op"))
            self.pending.append((record, outputs))
        if len(self.calls) < _KEEP_CALLS:
            self.calls.append(record)
        self.stack.append((frame, record, outputs))

    @staticmethod
    def _keep(outputs):
        if not all(type(t) is _Tensor for t in outputs) or sum(_numel(t) for t in outputs) > _KEEP_NUMEL:
            return None
        return [_copy(t) for t in outputs]

    def run(self, fn, *args, **kwargs):
        _setprofile(self)
        try:
            return fn(*args, **kwargs)
        finally:
            self.closing = True  # from here on, the c_calls are this method's own
            self.traced = _getprofile() is self
            _setprofile(None)
            for record, outputs in self.pending:  # async gathers: what they delivered once the answer returned
                if "out" not in record:
                    record["out"] = self._keep(outputs)

    def report(self) -> dict:
        return {"calls": self.calls, "objects": sorted(self.objects), "sampler": self.sampler,
                "tampered": self.tampered or not getattr(self, "traced", True)}


# ---- gather_padded ---------------------------------------------------------------------------

def _offset() -> int:
    return int.from_bytes(_urandom(2), "little") % 997 + 1


def _returned(result):
    if type(result) is not list:
        return {"type": type(result).__name__}
    return {"type": "list", "tensors": [_copy(t) if type(t) is _Tensor else f"<not a tensor: {type(t).__name__}>"
                                        for t in result]}


def _describe(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first}"[:400]


def _gather_run(fn, cases, world_size, members=None, deadline=None):
    """Every case on one process group; rank r's report per case: its offset, what fn returned and
    what ran. A case that raises ends the rank's run (its partners would wait in vain).

    Under heavy load, gloo sometimes fails to connect a group before any answer code runs (seen with
    the course's own solution too); such a run is started again once, while time is left."""
    while True:
        ready = _mmap(-1, world_size)  # shared with the forked ranks: byte r is 1 once rank r's group is up

        def rank_main(rank, world):
            group = dist.new_group(members) if members is not None else None
            ready[rank] = 1
            if members is not None and rank not in members:
                return None
            reports = []
            for case in cases:
                offset = _offset()
                mine = _shift(case["tensors"][rank], offset)
                if case["strided"]:
                    mine = _strided(mine)
                before = _copy(mine)
                watch = _Watch(group)
                report = {"offset": offset}
                try:
                    result = watch.run(fn, mine, group=group) if members is not None else watch.run(fn, mine)
                except BaseException as exc:
                    reports.append({**report, **watch.report(), "error": _describe(exc)})
                    break
                unchanged = mine.shape == before.shape and mine.dtype == before.dtype and _equal(mine, before)
                reports.append({**report, **watch.report(), **_returned(result), "unchanged": bool(unchanged)})
            return reports

        try:
            return _run_ranks(rank_main, world_size, timeout=_TIMEOUT_S, collective_timeout=_COLLECTIVE_S)
        except _RankError:
            if all(ready[:]) or deadline is None or _monotonic() + _TIMEOUT_S > deadline:
                raise
            deadline = None  # one more run at most
        finally:
            ready.close()


def gather_padded(namespace, inputs):
    fn = lookup(namespace, "gather_padded")
    group = inputs["group"]
    deadline = _monotonic() + _RETRY_BEFORE_S
    return {
        "one_dim": attempt(_gather_run, fn, inputs["one_dim"], 2, deadline=deadline),
        "n_dim": attempt(_gather_run, fn, inputs["n_dim"], 2, deadline=deadline),
        "group": attempt(_gather_run, fn, [group["case"]], group["world_size"], group["members"], deadline=deadline),
    }


# ---- shard_indices ---------------------------------------------------------------------------

def _indices(fn, n, rank, world_size, epoch, seed, shuffle):
    watch = _Watch()
    before = _generator_state(_default_generator)
    try:
        result = watch.run(fn, n, rank, world_size, epoch=epoch, seed=seed, shuffle=shuffle)
    except BaseException as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:2000], **watch.report()}
    rng_kept = bool(_equal(before, _generator_state(_default_generator)))
    if type(result) is not list:
        result = f"<not a list: {type(result).__name__}>"
    else:
        result = [i if type(i) is int else f"<{type(i).__name__}>" for i in result[:1000]]
    return {"result": result, "rng_kept": rng_kept, "sampler": watch.sampler, "tampered": watch.report()["tampered"]}


def shard_indices(namespace, inputs):
    fn = lookup(namespace, "shard_indices")
    return {name: [attempt(_indices, fn, *args) for args in grid] for name, grid in inputs.items()}
