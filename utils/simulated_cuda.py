"""A simulated CUDA caching allocator, so the free-memory workflow can be checked without a GPU.

Without a GPU, ``torch.cuda.memory_allocated()`` and ``memory_reserved()`` read 0 and
``empty_cache()`` does nothing, so code that follows the workflow (read the counters, drop the
names, ``gc.collect()``, ``empty_cache()``, read the counters again) cannot be told apart from
code that skips a step. Inside ``simulate_cuda()``, torch's CUDA memory API is served by a model
of the caching allocator instead:

- ``sim.tensor(nbytes, label)`` makes a tensor (in host memory) that counts as allocated on the
  simulated GPU until Python frees it;
- ``memory_allocated()``: bytes of those live tensors, each rounded up to 512 B as the real
  allocator rounds its blocks;
- ``memory_reserved()``: that plus the blocks freed since the last ``empty_cache()`` (the cache);
- ``empty_cache()``: hands the cached blocks back.

Every call and every free is logged in order in ``sim.events``, so a check can tell what a
workflow did and when. A real GPU carves blocks out of 2 MiB and 20 MiB segments, so its reserved
figures are larger and coarser; the order of the steps is what carries over.
"""
from __future__ import annotations

import contextlib
import weakref

import torch

BLOCK = 512
# Functions replaced while simulating, in every namespace that exposes them.
_API = ("is_available", "device_count", "current_device", "synchronize", "memory_allocated", "memory_reserved",
        "memory_stats", "empty_cache", "reset_peak_memory_stats")


def _rounded(nbytes: int) -> int:
    return -(-nbytes // BLOCK) * BLOCK


class SimulatedCuda:
    """The allocator model; its methods stand in for ``torch.cuda``'s of the same names."""

    def __init__(self, cached_bytes: int = 0):
        self.live: dict[int, int] = {}
        self.cached = _rounded(cached_bytes)
        self.events: list[tuple[str, object]] = []

    def tensor(self, nbytes: int, label: str = "") -> torch.Tensor:
        """A tensor of ``nbytes`` that the simulated GPU counts as allocated while it lives."""
        t = torch.zeros(nbytes, dtype=torch.uint8)
        self.live[id(t)] = _rounded(nbytes)
        weakref.finalize(t, self._free, id(t), label)
        return t

    def _free(self, key: int, label: str) -> None:
        self.cached += self.live.pop(key)
        self.events.append(("free", label))

    def _read(self, name: str, value: int) -> int:
        self.events.append((name, value))
        return value

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return 0

    def synchronize(self, device=None) -> None:
        pass

    def memory_allocated(self, device=None) -> int:
        return self._read("memory_allocated", sum(self.live.values()))

    def memory_reserved(self, device=None) -> int:
        return self._read("memory_reserved", sum(self.live.values()) + self.cached)

    def memory_stats(self, device=None) -> dict:
        allocated = self.memory_allocated()
        return {"allocated_bytes.all.current": allocated, "reserved_bytes.all.current": self.memory_reserved()}

    def empty_cache(self) -> None:
        self.cached = 0
        self.events.append(("empty_cache", None))

    def reset_peak_memory_stats(self, device=None) -> None:
        pass


@contextlib.contextmanager
def simulate_cuda(cached_bytes: int = 0):
    """Serve ``torch.cuda`` (and ``torch.cuda.memory``, ``torch.accelerator``) memory calls from a
    ``SimulatedCuda`` whose cache starts with ``cached_bytes``; everything is restored on exit."""
    sim = SimulatedCuda(cached_bytes)
    saved = []
    for module in (torch.cuda, torch.cuda.memory, getattr(torch, "accelerator", None)):
        for name in _API:
            if module is not None and hasattr(module, name):
                saved.append((module, name, getattr(module, name)))
                setattr(module, name, getattr(sim, name))
    try:
        yield sim
    finally:
        for module, name, original in reversed(saved):
            setattr(module, name, original)
