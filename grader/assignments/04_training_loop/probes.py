"""Probes for 04_training_loop (run in the sandbox after grader/probe_helpers.py)."""
import torch
from torch import nn

ARCHITECTURES = {
    "tanh_mlp": lambda: nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)),
    "relu_mlp": lambda: nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4)),
    "linear": lambda: nn.Linear(3, 2),
}
LOSSES = {"cross_entropy": nn.CrossEntropyLoss, "mse": nn.MSELoss}


def _run(fn, case):
    model = ARCHITECTURES[case["arch"]]()
    model.load_state_dict(case["state"])
    if case["stale_grads"]:
        for p in model.parameters():
            p.grad = torch.full_like(p, 100.0)
    optimizer = torch.optim.SGD(model.parameters(), lr=case["lr"], momentum=case["momentum"])
    batches = [(x, y) for x, y in case["batches"]]
    graphs = _Graphs(case["loss"], "batch")    # the loss function, tagging each loss's graph to see how long it lives
    losses = fn(model, (b for b in batches) if case["generator"] else batches, optimizer, graphs)
    graphs.older_alive("the end of the call")
    return {
        "type": type(losses).__name__,
        "items": [v if type(v) is float else f"<{type(v).__name__}>" for v in losses] if type(losses) is list else [],
        "state": {k: plain(v) for k, v in model.state_dict().items()}, "kept": graphs.kept,
        "losses": graphs.values[:100],    # what loss_fn returned, batch by batch: the values to log
    }


def train_epoch(namespace, inputs):
    fn = lookup(namespace, "train_epoch")
    return {"runs": [attempt(_run, fn, case) for case in inputs["cases"]],
            "empty": attempt(lambda: (lambda r: [type(r).__name__, len(r) if type(r) is list else -1])(
                fn(ARCHITECTURES["linear"](), iter([]), torch.optim.SGD(nn.Linear(3, 2).parameters(), lr=0.1),
                   nn.MSELoss())))}


# ---- train_accumulated -------------------------------------------------------------------------
# Bound now: probes load before any student code, so these are the real objects.
OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}
_record = torch.autograd.profiler.record_function
OPTIMIZER_STEP = "grader: optimizer step"   # its own reads (Adam's step count) are not the student's
_push_mode, _pop_mode = torch._C._push_on_torch_function_stack, torch._C._pop_torch_function_stack
_mode_depth, _mode_at = torch._C._len_torch_function_stack, torch._C._get_function_stack_at
_weakref, _collect, _Device = __import__("weakref").ref, __import__("gc").collect, torch.device
_getattr, _type, _any, _len = getattr, type, any, len
# What the log reports: calls that read a tensor's value on the host (the trusted check decides
# which of them count as a synchronization).
HOST_READS = {"item", "tolist", "numpy", "__array__", "__float__", "__int__", "__index__", "__complex__",
              "__bool__", "__format__", "__repr__", "__str__", "untyped_storage", "data_ptr", "cpu"}


class _HostLog(_TorchFunctionMode):
    """Logs the host reads the student's code makes (not those inside optimizer.step), and has each
    forward pass (each Linear) check that no earlier micro-batch's graph still waits for backward()."""

    def __init__(self, graphs):  # (TorchFunctionMode's own __init__ does nothing)
        self.reads, self.linear, self.paused, self.graphs = [], 0, False, graphs

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self.paused:
            name = _getattr(func, "__name__", "")
            if name in HOST_READS:
                self.reads.append(name)
            elif name == "to" and _copies_to_host(args, kwargs):
                self.reads.append("to(cpu)")
            elif name == "linear":
                self.linear += 1
                self.graphs.pending(f"micro-batch {_len(self.graphs.tokens) + 1}'s forward pass")
        return func(*args, **kwargs)


def _copies_to_host(args, kwargs):
    """A one-number tensor (a loss) sent to the CPU, by name or by device. Not `inputs.to(device)`:
    moving data to the model's device is no read, and here that device is the CPU too."""
    targets = (*args[1:], *kwargs.values())
    scalar = _len(args) > 0 and _type(args[0]) in (torch.Tensor, nn.Parameter) and args[0].numel() == 1
    return scalar and _any((_type(t) is str and t.startswith("cpu")) or (_type(t) is _Device and t.type == "cpu")
                           for t in targets)


class _Token:
    """Held by one loss's graph node: it lives exactly as long as that autograd graph; `done` once
    backward() has gone through it."""
    done = False


class _Tag(torch.autograd.Function):
    @staticmethod
    def forward(ctx, loss, token):
        ctx.token = token
        return loss.clone()

    @staticmethod
    def backward(ctx, grad):
        ctx.token.done = True
        return grad, None


_tag = _Tag.apply  # bound now, so that patching torch.autograd.Function later changes nothing here


def _note_first(record: list, where: str, graphs) -> None:
    """Append [where, graphs()] to record the first time graphs() lists any (the first is enough to
    report), after a gc.collect() has freed what only a reference cycle kept."""
    if not record and graphs():
        _collect()
        if graphs():
            record.append([where, graphs()])


class _Graphs:
    """A loss_fn that tags each loss's graph, and notes which older graphs are still alive, and which
    graphs were still waiting for their backward() when a forward pass ran."""

    def __init__(self, loss, unit="micro-batch"):
        self.loss, self.tokens, self.kept, self.ahead, self.unit = LOSSES[loss](), [], [], [], unit
        self.values = []   # train_epoch's losses, copied as returned (no host read: train_accumulated's are counted)

    def older_alive(self, where):
        _note_first(self.kept, where, lambda: [i for i, ref in enumerate(self.tokens[:-1]) if ref() is not None])

    def pending(self, where):
        _note_first(self.ahead, where,
                    lambda: [i for i, ref in enumerate(self.tokens) if (t := ref()) is not None and not t.done])

    def __call__(self, outputs, targets):
        self.older_alive(f"{self.unit} {_len(self.tokens) + 1}")
        self.pending(f"{self.unit} {_len(self.tokens) + 1}'s loss")
        token = _Token()
        self.tokens.append(_weakref(token))
        loss = _tag(self.loss(outputs, targets), token)
        if self.unit == "batch":
            self.values.append(plain(loss))
        return loss


def _counted(base, log, graphs):
    class Counted(base):
        steps = 0

        def step(self, closure=None):  # the optimizer's own reads (Adam's step count) are not the student's
            Counted.steps += 1
            graphs.older_alive(f"optimizer step {Counted.steps}")
            log.paused = True
            try:
                with _record(OPTIMIZER_STEP):
                    return base.step(self, closure)
            finally:
                log.paused = False
    return Counted


def _run_accumulated(fn, case):
    model = ARCHITECTURES[case["arch"]]()
    model.load_state_dict(case["state"])
    if case["stale_grads"]:
        for p in model.parameters():
            p.grad = torch.full_like(p, 100.0)
    graphs = _Graphs(case["loss"])
    log = _HostLog(graphs)
    optimizer = _counted(OPTIMIZERS[case["optimizer"]], log, graphs)(model.parameters(), **case["options"])
    batches = [(x, y) for x, y in case["batches"]]
    depth = _mode_depth() + 1
    with AtenLog() as aten:
        _push_mode(log)
        try:
            losses = fn(model, (b for b in batches) if case["generator"] else batches, optimizer, graphs,
                        case["accumulate"])
        finally:
            intact = _mode_depth() == depth and _mode_at(depth - 1) is log
            while _mode_depth() >= depth:
                _pop_mode()
    graphs.older_alive("the end of the call")
    return {
        "type": type(losses).__name__,
        "items": [v if type(v) is float else f"<{type(v).__name__}>" for v in losses] if type(losses) is list else [],
        "state": {k: plain(v) for k, v in model.state_dict().items()},
        "reads": log.reads[:500], "linear": log.linear, "intact": intact, "steps": type(optimizer).steps,
        "scalar_reads": aten.count("item", outside=OPTIMIZER_STEP),   # on every thread, seen by ATen
        "loss_calls": _len(graphs.tokens), "kept": graphs.kept, "ahead": graphs.ahead,
    }


def _empty(fn):
    model = ARCHITECTURES["linear"]()
    result = fn(model, iter([]), torch.optim.SGD(model.parameters(), lr=0.1), nn.MSELoss(), 2)
    return [type(result).__name__, len(result) if type(result) is list else -1]


def train_accumulated(namespace, inputs):
    fn = lookup(namespace, "train_accumulated")
    return {"runs": [attempt(_run_accumulated, fn, case) for case in inputs["cases"]], "empty": attempt(_empty, fn)}
