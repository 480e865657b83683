"""Probes for 05_memory (run in the sandbox after grader/probe_helpers.py)."""
import contextlib
import gc
import weakref

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint_sequential as _checkpoint_sequential

from utils.simulated_cuda import calls_through, simulate_cuda, without_cuda  # bound before any student code runs

_collect, _gc_callbacks, _disable, _enable, _isenabled = gc.collect, gc.callbacks, gc.disable, gc.enable, gc.isenabled


class _Holder:
    pass


@contextlib.contextmanager
def _collections():
    """The generations of the garbage collections run inside the block, with automatic collection
    off: only the answer's own gc.collect() (or the probe's) runs one."""
    generations, was_enabled = [], _isenabled()

    def seen(phase, info):
        if phase == "start":
            generations.append(info["generation"])

    _disable()
    _gc_callbacks.append(seen)
    try:
        yield generations
    finally:
        if seen in _gc_callbacks:
            _gc_callbacks.remove(seen)
        if was_enabled:
            _enable()


def _cycle_with_payload():
    holder = _Holder()
    holder.self_reference = holder
    holder.model = nn.Linear(64, 64)
    holder.model.owner = [holder]
    return holder


def release(namespace, inputs):
    fn = lookup(namespace, "release")

    def report():
        result = fn({"_tensor": torch.zeros(1000), "_other": 1}, "_tensor")
        if type(result) is not dict:
            return {"type": type(result).__name__}
        return {"type": "dict", "keys": sorted(str(k) for k in result),
                "values": {str(k): v if type(v) is int else f"<{type(v).__name__}>" for k, v in result.items()}}

    def names():
        kept, x, shared = torch.ones(3), torch.ones(3), _Holder()
        shared.weights = torch.ones(2)
        # "x_too" and "model_too" name the objects of two listed names: they stay, and so do the objects
        ns = {"x": x, "x_too": x, "y": [torch.ones(2)], "keep": kept, "n": 5, "model": shared, "model_too": shared}
        fn(ns, "x", "y", "model")
        namespace["_release_probe"], namespace["_release_neighbour"] = torch.ones(4), torch.ones(4)
        fn(namespace, "_release_probe")
        return {"left": sorted(ns), "keep_same": ns.get("keep") is kept, "n": ns.get("n"),
                "aliases_same": ns.get("x_too") is x and ns.get("model_too") is shared,
                "objects_intact": sorted(vars(shared)) == ["weights"] and torch.equal(x, torch.ones(3)),
                "globals_removed": "_release_probe" not in namespace,
                "globals_kept": "_release_neighbour" in namespace}

    def cycles():
        with _collections() as generations:
            ns = {"trainer": _cycle_with_payload(), "other": 0}
            refs = [weakref.ref(ns["trainer"]), weakref.ref(ns["trainer"].model),
                    weakref.ref(ns["trainer"].model.weight)]
            _collect()     # the cycle survives a collection, as a model does: now only a full one frees it
            generations.clear()
            fn(ns, "trainer")
            return {"dead": [r() is None for r in refs], "left": sorted(ns), "generations": list(generations)}

    def missing():
        ns = {"a": 1, "b": 2}
        try:
            fn(ns, "a", "no_such_name", "b")
        except Exception as exc:
            return {"raised": type(exc).__name__, "is_key_error": isinstance(exc, KeyError),
                    "names_it": "no_such_name" in str(exc), "left": sorted(ns.items())}
        return {"raised": None, "left": sorted(ns.items())}

    def workflow():
        sizes = inputs["workflow"]
        with _collections(), simulate_cuda(cached_bytes=sizes["cached"]) as sim:
            ns = {"model": sim.tensor(sizes["model"], "model"), "keep": sim.tensor(sizes["keep"], "keep"),
                  "trainer": _Holder(), "steps": 3}
            ns["trainer"].state = sim.tensor(sizes["cycle"], "cycle")
            ns["trainer"].self_reference = ns["trainer"]
            _collect()     # the cycle is old, as in a notebook: only a full collection frees it
            tensors = {"model": ns["model"], "keep": ns["keep"], "cycle": ns["trainer"].state}
            ids, refs = {id(t): k for k, t in tensors.items()}, {k: weakref.ref(t) for k, t in tensors.items()}
            del tensors
            result = fn(ns, "model", "trainer")
            events = [list(event) for event in sim.events]
            # the allocator's books against the tensors themselves: an answer that wrote to the simulation
            # (its events, its counts) instead of freeing memory leaves them apart
            books = {"counted": sorted(ids[k] for k in sim.live if k in ids),
                     "alive": sorted(k for k, ref in refs.items() if ref() is not None)}
        report = {str(k): v for k, v in result.items() if type(v) is int} if type(result) is dict else None
        return {"report": report, "events": events, "left": sorted(ns), "books": books}

    steps = (("report", report), ("names", names), ("cycles", cycles), ("missing", missing), ("workflow", workflow))
    # as on a machine without a GPU, whatever machine grades; workflow() adds a simulated one. An answer
    # that imported torch.cuda's functions by name reaches both through calls_through.
    with calls_through(namespace), without_cuda():
        return {name: attempt(step) for name, step in steps}


# Bound before any student code runs: how the probe recognises a call to checkpoint_sequential
# (its code object), however the answer reached the function.
_CHECKPOINT_SEQUENTIAL = _checkpoint_sequential.__code__
_setprofile, _getprofile = __import__("sys").setprofile, __import__("sys").getprofile
_thread_setprofile = __import__("threading").setprofile      # threads the answer starts
_getframe = __import__("sys")._getframe
_CONTAINERS = {"list": list, "Sequential": lambda blocks: nn.Sequential(*blocks), "ModuleList": nn.ModuleList}
_manual_seed, _grad = torch.manual_seed, torch.autograd.grad
_current_node = torch._C._current_autograd_node
# The first Python code the autograd engine calls lies right below this frame (CPU backward runs on
# the calling thread): for a recomputation by checkpoint, checkpoint's own code.
_ENGINE = torch.autograd.graph._engine_run_backward.__code__
_FUNCTION_APPLY = torch.autograd.function.BackwardCFunction.apply.__code__   # a custom Function's backward


def _code_objects():
    """Every code object of torch.utils.checkpoint (functions, methods, nested functions), bound now."""
    import inspect
    import torch.utils.checkpoint as module

    found, todo = set(), []
    for obj in vars(module).values():
        members = vars(obj).values() if isinstance(obj, type) and obj.__module__ == module.__name__ else [obj]
        for member in members:
            member = getattr(member, "__func__", member)
            try:
                member = inspect.unwrap(member)
            except Exception:
                continue
            code = getattr(member, "__code__", None)
            if code is not None and code.co_filename == module.__file__:
                todo.append(code)
    while todo:
        code = todo.pop()
        if code not in found:
            found.add(code)
            todo.extend(c for c in code.co_consts if type(c) is type(code))
    return frozenset(found)


_CHECKPOINT_CODE = _code_objects()


def _engine_called() -> str:
    """Which code the autograd engine called to get here: "checkpoint" (torch.utils.checkpoint's own
    code, directly or as a custom Function's backward), the name of another function (a hook, say),
    or "outside backward" (no backward pass of this thread is running)."""
    frame, chain = _getframe(2), []
    while frame is not None and frame.f_code is not _ENGINE:
        chain.append(frame.f_code)
        frame = frame.f_back
    if frame is None or not chain:
        return "outside backward"
    first = chain[-2] if chain[-1] is _FUNCTION_APPLY and len(chain) > 1 else chain[-1]
    return "checkpoint" if first in _CHECKPOINT_CODE else str(first.co_name)[:80]


def _heap_reader():
    """The bytes malloc has handed out and not taken back (glibc's mallinfo2, every arena and mmap'd
    block): torch's CPU tensors live there. None where the C library has no such call."""
    try:
        import ctypes

        class Info(ctypes.Structure):
            _fields_ = [(n, ctypes.c_size_t) for n in
                        "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

        read = ctypes.CDLL(None).mallinfo2
        read.restype, read.argtypes = Info, []
    except Exception:
        return None

    def heap():
        info = read()
        return int(info.uordblks + info.hblkhd)
    return heap


_heap = _heap_reader()


class _Logged(nn.Module):
    """One block (Linear, LayerNorm, Tanh, and Dropout when asked) that logs its index every time its
    forward runs, and, once ``trace["backward"]`` is set, how the run came about (a recomputation)."""

    def __init__(self, index, log, state, trace=None, dropout=0.0):
        super().__init__()
        self.index, self.log, self.trace = index, log, trace
        self.body = nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8), nn.Tanh(), *([nn.Dropout(dropout)] if dropout else []))
        self.body.load_state_dict(state)

    def forward(self, h):
        self.log.append(self.index)
        if self.trace is not None and self.trace["backward"]:
            node = _current_node()
            self.trace["events"].append(["run", self.index, None if node is None else str(node.name())[:80],
                                         _engine_called()])
        return self.body(h)


def _logged_blocks(states, log, trace=None, dropout=0.0):
    blocks = [_Logged(i, log, state, trace, dropout) for i, state in enumerate(states)]
    if trace is not None:  # when the backward pass reaches each block's weight (through the autograd graph)
        for block in blocks:
            block.body[0].weight.register_hook(lambda grad, i=block.index: trace["events"].append(["grad", i]))
    return blocks


def _calls_checkpoint_sequential(fn, *args):
    """fn(*args), and whether checkpoint_sequential's code ran during it, on this thread or on one it
    started (None: the answer switched the call tracing off, so nobody can tell). A copy of its code
    object (``__code__.replace()``, under any name) is its code too: the same bytecode and names."""
    seen, original = [False], _CHECKPOINT_SEQUENTIAL

    def profiler(frame, event, arg):
        code = frame.f_code
        if event == "call" and (code is original or (code.co_code == original.co_code
                                                     and code.co_names == original.co_names)):
            seen[0] = True

    _setprofile(profiler)
    _thread_setprofile(profiler)
    try:
        result = fn(*args)
        traced = _getprofile() is profiler
    finally:
        _setprofile(None)
        _thread_setprofile(None)
    return result, seen[0] if traced else None


def checkpoint_segments(namespace, inputs):
    fn = lookup(namespace, "checkpoint_segments")

    def case(size, container, requires_grad):
        log, saved, trace = [], [], {"backward": False, "events": []}
        blocks = _logged_blocks(inputs["states"], log, trace)
        params = [p for block in blocks for p in block.parameters()]
        x = inputs["x"].clone().requires_grad_(requires_grad)
        chain = _CONTAINERS[container](blocks)

        def pack(t):  # every tensor autograd saves for backward outside a checkpoint (copied once measured)
            if tuple(t.shape) == tuple(x.shape):  # activations; weights have other shapes
                saved.append(t)
            return t

        # The memory the call leaves held until the backward pass: whatever keeps it (autograd, the
        # answer's own lists or hooks), malloc counts it.
        before = _heap() if _heap else 0
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out, sequential = _calls_checkpoint_sequential(fn, chain, x, size)
        held = _heap() - before if _heap else None
        if type(out) is not torch.Tensor or not out.requires_grad:
            return {"out": plain(out), "requires_grad": False}
        forward_log = list(log)
        trace["backward"] = True
        grads = _grad(out.square().sum(), ([x] if requires_grad else []) + params)
        trace["backward"] = False
        return {"out": plain(out), "requires_grad": True, "grads": [plain(g) for g in grads],
                "forward_log": forward_log, "backward_log": list(log[len(forward_log):]),
                "saved": [plain(t) for t in saved[:64]], "sequential": sequential, "held": held,
                "events": trace["events"][:200]}

    def random(size, container, requires_grad, seed):
        """Blocks with dropout: the recomputation must draw the forward pass's random numbers again."""
        blocks = _logged_blocks(inputs["states"], [], dropout=inputs["dropout"])
        params = [p for block in blocks for p in block.parameters()]
        x = inputs["x"].clone().requires_grad_(requires_grad)
        chain = _CONTAINERS[container](blocks)
        _manual_seed(seed)
        out = fn(chain, x, size)
        if type(out) is not torch.Tensor or not out.requires_grad:
            return {"out": plain(out), "requires_grad": False}
        grads = _grad(out.square().sum(), ([x] if requires_grad else []) + params)
        return {"out": plain(out), "requires_grad": True, "grads": [plain(g) for g in grads]}

    def invalid(size):
        try:
            fn(_logged_blocks(inputs["states"], []), inputs["x"].clone(), size)
        except Exception as exc:
            return {"raised": type(exc).__name__, "is_value_error": isinstance(exc, ValueError)}
        return {"raised": None}

    def warm_up():  # first calls allocate for good (torch's lazy set-up, the answer's imports): not measured
        x = inputs["x"][:4].clone().requires_grad_()
        out = fn(_logged_blocks(inputs["states"], []), x, 2)
        if type(out) is torch.Tensor and out.requires_grad:
            _grad(out.sum(), x)

    attempt(warm_up)
    return {"cases": [attempt(case, *spec) for spec in inputs["cases"]],
            "random": [attempt(random, *spec) for spec in inputs["random"]],
            "invalid": [attempt(invalid, size) for size in inputs["invalid"]]}
