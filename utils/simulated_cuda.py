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

``simulate_cuda_rng()`` does the same for the random number generators: a machine with several
GPUs, so that code saving and restoring every GPU's generator can be checked on a CPU.

``without_cuda()`` (at the end) is the other half: a machine with no GPU, even on one that has
GPUs. The grader's probes run the student's functions inside it, and the simulations above on top
of it, so an answer earns the same marks on a grading machine with a GPU as on one without.

Both replace module attributes (``torch.cuda.empty_cache``). An answer that imported a function by
name (``from torch.cuda import empty_cache``) holds the real one: ``calls_through(namespace)``
makes such names call the module's attribute of the moment, so the simulations reach them too.
"""
from __future__ import annotations

import collections
import contextlib
import weakref

import torch

BLOCK = 512
# Functions replaced while simulating, in every namespace that exposes them.
_API = ("is_available", "device_count", "current_device", "synchronize", "memory_allocated", "memory_reserved",
        "memory_stats", "mem_get_info", "empty_cache", "ipc_collect", "reset_peak_memory_stats")
TOTAL = 80 * 2**30  # the simulated GPU's memory, for mem_get_info()


# The modules whose memory API simulate_cuda() replaces.
_MEMORY_MODULES = tuple(m for m in (torch.cuda, torch.cuda.memory, getattr(torch, "accelerator", None)) if m is not None)


def _cuda_functions() -> dict[int, tuple]:
    """id -> (function, module, name) for the memory API's real functions, found when this module
    loads: before any student code runs. The dict holds each function, so no other object shares its id."""
    found = [(getattr(m, n), m, n) for m in _MEMORY_MODULES for n in _API if hasattr(m, n)]
    return {id(fn): (fn, m, n) for fn, m, n in found}


_CUDA_FUNCTIONS = _cuda_functions()


def _forwarder(module, name: str):
    def call(*args, **kwargs):
        return getattr(module, name)(*args, **kwargs)
    call.__name__ = call.__qualname__ = name
    return call


@contextlib.contextmanager
def calls_through(namespace: dict):
    """While the block runs, every name in ``namespace`` bound to one of torch's CUDA memory
    functions (``from torch.cuda import empty_cache, is_available``) calls the module's attribute of
    the moment, as ``torch.cuda.empty_cache()`` does: simulate_cuda() and without_cuda() reach it."""
    bound = {key: value for key, value in namespace.items() if id(value) in _CUDA_FUNCTIONS}
    for key, value in bound.items():
        namespace[key] = _forwarder(*_CUDA_FUNCTIONS[id(value)][1:])
    try:
        yield
    finally:
        namespace.update(bound)


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

    def mem_get_info(self, device=None) -> tuple[int, int]:
        """(free, total) as the driver sees them: what the cache holds is not free to other processes."""
        return TOTAL - sum(self.live.values()) - self.cached, TOTAL

    def empty_cache(self) -> None:
        self.cached = 0
        self.events.append(("empty_cache", None))

    def ipc_collect(self) -> None:
        """Frees memory shared with other processes once they let go of it: none is, here."""
        self.events.append(("ipc_collect", None))

    def reset_peak_memory_stats(self, device=None) -> None:
        pass


@contextlib.contextmanager
def simulate_cuda(cached_bytes: int = 0):
    """Serve ``torch.cuda`` (and ``torch.cuda.memory``, ``torch.accelerator``) memory calls from a
    ``SimulatedCuda`` whose cache starts with ``cached_bytes``; everything is restored on exit."""
    sim = SimulatedCuda(cached_bytes)
    saved = []
    for module in _MEMORY_MODULES:
        for name in _API:
            if hasattr(module, name):
                saved.append((module, name, getattr(module, name)))
                setattr(module, name, getattr(sim, name))
    try:
        yield sim
    finally:
        for module, name, original in reversed(saved):
            setattr(module, name, original)


# ---- random number generators ----------------------------------------------------------------
# Replaced while simulating generators, in torch.cuda and wherever torch.cuda.random imported
# them by name. With is_initialized() True, torch's lazy CUDA start-up runs each call at once.
_RNG_API = ("is_available", "is_initialized", "_lazy_init", "device_count", "current_device", "set_device",
            "_exchange_device", "_maybe_exchange_device")


class SimulatedCudaRng:
    """A machine with several GPUs, as far as torch.cuda's random number API can tell.

    Each device's generator is a CPU ``torch.Generator`` standing in for the GPU's one (its state is
    a uint8 tensor, as on a GPU, though longer), installed as ``torch.cuda.default_generators``. So
    torch's own ``torch.cuda.get_rng_state(i)``, ``set_rng_state``, the ``_all`` forms,
    ``manual_seed_all``, ``initial_seed``, ``torch.cuda.device(i)`` and ``torch.random.fork_rng`` all
    run unchanged on them. Drawing on the "GPU" means drawing from ``sim.generators[i]``."""

    def __init__(self, generators: list[torch.Generator]):
        self.generators = tuple(generators)
        self.current = 0

    def draw(self, n: int) -> list[torch.Tensor]:
        """``n`` uniform numbers from every device's generator (moves each one on)."""
        return [torch.rand(n, generator=g) for g in self.generators]

    def states(self) -> list[torch.Tensor]:
        return [g.get_state() for g in self.generators]

    def _index(self, device) -> int:
        if isinstance(device, int):
            return device
        index = torch.device(device).index
        return self.current if index is None else index

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return True

    def _lazy_init(self) -> None:  # already "initialized" (also inside without_cuda(), whose _lazy_init raises)
        pass

    def device_count(self) -> int:
        return len(self.generators)

    def current_device(self) -> int:
        return self.current

    def set_device(self, device) -> None:
        self._exchange_device(self._index(device))

    def _exchange_device(self, index: int) -> int:  # what torch.cuda.device(i) calls on entry and exit
        if index < 0:
            return -1
        if index >= len(self.generators):
            raise RuntimeError(f"CUDA error: invalid device ordinal {index} (simulated)")
        previous, self.current = self.current, index
        return previous

    _maybe_exchange_device = _exchange_device


@contextlib.contextmanager
def simulate_cuda_rng(devices: int = 2, generators: list[torch.Generator] | None = None):
    """Serve torch.cuda's random number API from a ``SimulatedCudaRng`` with ``devices`` GPUs
    (or one per generator given), each seeded differently; everything is restored on exit."""
    if generators is None:
        generators = [torch.Generator().manual_seed(1000 + i) for i in range(devices)]
    sim = SimulatedCudaRng(generators)
    saved = [(torch.cuda, "default_generators", torch.cuda.default_generators)]
    torch.cuda.default_generators = sim.generators
    for module in (torch.cuda, torch.cuda.random):
        for name in _RNG_API:
            if name in vars(module):
                saved.append((module, name, getattr(module, name)))
                setattr(module, name, getattr(sim, name))
    accelerator = getattr(torch, "accelerator", None)
    for name in ("is_available", "device_count", "current_device_index"):
        if accelerator is not None and hasattr(accelerator, name):
            saved.append((accelerator, name, getattr(accelerator, name)))
            setattr(accelerator, name, getattr(sim, {"current_device_index": "current_device"}.get(name, name)))
    try:
        yield sim
    finally:
        for module, name, original in reversed(saved):
            setattr(module, name, original)


# ---- no GPU ----------------------------------------------------------------------------------
NO_GPU = "Found no NVIDIA driver on your system (simulated: the grader runs this as on a machine without a GPU)"


def _no_gpu(*args, **kwargs):
    raise RuntimeError(NO_GPU)


def _exchange_device(device: int) -> int:  # torch.cuda.device(-1) / device(None) is a no-op without a GPU too
    if device < 0:
        return -1
    raise RuntimeError(NO_GPU)


# What a machine without a GPU answers, by name, in every namespace below that binds the name
# (torch.cuda.random and torch.cuda.memory import some of torch.cuda's by name). Without a GPU,
# anything that would start CUDA raises; the counters read 0 and empty_cache() does nothing.
_WITHOUT_GPU = {
    "is_available": lambda: False, "is_initialized": lambda: False, "device_count": lambda: 0,
    "_lazy_init": _no_gpu, "current_device": _no_gpu, "set_device": _no_gpu, "synchronize": _no_gpu,
    "_exchange_device": _exchange_device, "_maybe_exchange_device": _exchange_device,
    "current_device_index": _no_gpu, "set_device_index": _no_gpu,  # torch.accelerator's
    "memory_stats": lambda *args, **kwargs: collections.OrderedDict(), "empty_cache": lambda: None,
    **dict.fromkeys(("memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved"),
                    lambda *args, **kwargs: 0),
    "reset_peak_memory_stats": _no_gpu,
}


def _without_cuda_patches() -> tuple:
    """(namespace, name, replacement) for every patch, worked out once, when this module loads:
    before any student code runs, so that code cannot change what the view installs."""
    modules = [torch.cuda, torch.cuda.random, torch.cuda.memory]
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        modules += [accelerator, getattr(accelerator, "memory", None)]
    patches = [(m, name, fn) for m in modules if m is not None for name, fn in _WITHOUT_GPU.items() if name in vars(m)]
    patches.append((torch.cuda, "default_generators", ()))  # filled in once a real GPU has started
    if hasattr(torch._C, "_accelerator_getDefaultGenerator"):  # torch.accelerator.random.get_rng_state(i)
        patches.append((torch._C, "_accelerator_getDefaultGenerator", _no_gpu))
    return tuple(patches)


def _make_without_cuda():
    patches, cuda, getattr_, setattr_ = _without_cuda_patches(), torch.cuda, getattr, setattr

    @contextlib.contextmanager
    def without_cuda():
        """torch sees no GPU until the block ends, whatever the machine: ``torch.cuda.is_available()``
        and ``torch.accelerator.is_available()`` are False, no device is counted, the memory counters
        read 0, ``empty_cache()`` does nothing, and whatever would start CUDA
        (``torch.cuda.get_rng_state()``, ``current_device()``, ``synchronize()``...) raises
        RuntimeError, as on a machine without one. Calls torch queues for a GPU that has not started
        (``torch.cuda.set_rng_state``, ``manual_seed_all``) are dropped on exit, and everything is
        restored. It covers torch.cuda's and torch.accelerator's API; a tensor created directly on
        a real "cuda" device still reaches it."""
        saved = [(module, name, getattr_(module, name)) for module, name, _ in patches]
        queued, tracker = list(cuda._queued_calls), cuda._lazy_seed_tracker
        try:
            cuda._lazy_seed_tracker = type(tracker)()
            for module, name, replacement in patches:
                setattr_(module, name, replacement)
            yield
        finally:
            for module, name, original in reversed(saved):
                setattr_(module, name, original)
            cuda._queued_calls[:] = queued
            cuda._lazy_seed_tracker = tracker

    return without_cuda


without_cuda = _make_without_cuda()
