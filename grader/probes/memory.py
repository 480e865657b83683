"""Probes for 05_memory (run in the sandbox; see common.py)."""
import gc
import weakref

import torch
from torch import nn

from utils.simulated_cuda import simulate_cuda  # bound before any student code runs


class _Holder:
    pass


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
        kept = torch.ones(3)
        ns = {"x": torch.ones(3), "y": [torch.ones(2)], "keep": kept, "n": 5}
        fn(ns, "x", "y")
        namespace["_release_probe"], namespace["_release_neighbour"] = torch.ones(4), torch.ones(4)
        fn(namespace, "_release_probe")
        return {"left": sorted(ns), "keep_same": ns.get("keep") is kept, "n": ns.get("n"),
                "globals_removed": "_release_probe" not in namespace,
                "globals_kept": "_release_neighbour" in namespace}

    def cycles():
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            ns = {"trainer": _cycle_with_payload(), "other": 0}
            refs = [weakref.ref(ns["trainer"]), weakref.ref(ns["trainer"].model),
                    weakref.ref(ns["trainer"].model.weight)]
            fn(ns, "trainer")
            return {"dead": [r() is None for r in refs], "left": sorted(ns)}
        finally:
            if was_enabled:
                gc.enable()

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
        was_enabled = gc.isenabled()
        gc.disable()  # only the answer's own gc.collect() may free the cycle
        try:
            with simulate_cuda(cached_bytes=sizes["cached"]) as sim:
                ns = {"model": sim.tensor(sizes["model"], "model"), "keep": sim.tensor(sizes["keep"], "keep"),
                      "trainer": _Holder(), "steps": 3}
                ns["trainer"].state = sim.tensor(sizes["cycle"], "cycle")
                ns["trainer"].self_reference = ns["trainer"]
                result = fn(ns, "model", "trainer")
                events = [list(event) for event in sim.events]
        finally:
            if was_enabled:
                gc.enable()
        report = {str(k): v for k, v in result.items() if type(v) is int} if type(result) is dict else None
        return {"report": report, "events": events, "left": sorted(ns)}

    return {name: attempt(step) for name, step in
            (("report", report), ("names", names), ("cycles", cycles), ("missing", missing), ("workflow", workflow))}


def _blocks(states):
    blocks = [nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8), nn.Tanh()) for _ in states]
    for block, state in zip(blocks, states):
        block.load_state_dict(state)
    return blocks


class _Logged(nn.Module):
    def __init__(self, index, log):
        super().__init__()
        self.index, self.log = index, log
        self.linear = nn.Linear(6, 6)

    def forward(self, h):
        self.log.append(self.index)
        return torch.tanh(self.linear(h))


def checkpointed_forward(namespace, inputs):
    fn = lookup(namespace, "checkpointed_forward")

    def with_grad():
        blocks = _blocks(inputs["states"])
        params = [p for b in blocks for p in b.parameters()]
        x = inputs["x"].clone().requires_grad_(True)
        out = fn(blocks, x)
        grads = torch.autograd.grad(out.square().sum(), [x, *params])
        return {"out": plain(out), "grads": [plain(g) for g in grads]}

    def data_input():
        blocks = nn.Sequential(*_blocks(inputs["states"]))
        out = fn(blocks, inputs["x"].clone())
        grads = torch.autograd.grad(out.square().sum(), list(blocks.parameters())) if out.requires_grad else []
        return {"requires_grad": bool(out.requires_grad), "out": plain(out), "grads": [plain(g) for g in grads]}

    def order():
        log = []
        torch.manual_seed(0)
        blocks = nn.ModuleList([_Logged(i, log) for i in range(4)])
        out = fn(blocks, inputs["x"][:3, :6].clone())
        out.sum().backward()
        return {"log": list(log), "all_grads": all(p.grad is not None for p in blocks.parameters())}

    return {"with_grad": attempt(with_grad), "data_input": attempt(data_input), "order": attempt(order)}
