"""Probes for 11_inference (run in the sandbox; see common.py)."""
import os
import tempfile

import torch
from torch import nn

# Bound while the probes load, before any student code runs.
_inference_mode_enabled = torch.is_inference_mode_enabled
_export_load = torch.export.load
_isfile = os.path.isfile

BATCHED_CASES = [(10, 4, True), (6, 3, False), (3, 8, True), (5, 1, False), (0, 5, True)]


def _scorer(state):
    """The model the batched_predict checks use: BatchNorm and Dropout, so eval mode matters."""
    model = nn.Sequential(nn.Linear(12, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3))
    model.load_state_dict(state)
    return model


def _export_model(state):
    model = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 4))
    model.load_state_dict(state)
    return model


def _plain_mlp(state):
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 4))
    model.load_state_dict(state)
    return model


def _watched(inner):
    """The model wrapped so that every call is logged: input shape, modes, inference mode."""
    log = []

    class Watched(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            log.append({"shape": [int(s) for s in x.shape], "training": bool(self.training),
                        "inner_training": any(bool(m.training) for m in self.inner.modules()),
                        "inference": bool(_inference_mode_enabled())})
            return self.inner(x)

    return Watched(), log


def batched_predict(namespace, inputs):
    fn = lookup(namespace, "batched_predict")

    def case(n, max_batch, training):
        model, log = _watched(_scorer(inputs["state"]))
        model.train(training)
        requests = [row.clone() for row in inputs["requests"][:n]]
        result = fn(model, requests, max_batch)
        if type(result) in (list, tuple):
            outputs = [plain(out) for out in result]
        else:
            outputs = f"<not a list: {type(result).__name__}>"
        return {"outputs": outputs, "calls": [dict(entry) for entry in log],
                "modes_after": [bool(m.training) for m in model.modules()]}

    return {f"{n},{max_batch},{training}": attempt(case, n, max_batch, training)
            for n, max_batch, training in BATCHED_CASES}


def export_and_reload(namespace, inputs):
    fn = lookup(namespace, "export_and_reload")
    folder = tempfile.mkdtemp(prefix="export-")

    def matches():
        model = _export_model(inputs["bn_state"]).train()
        path = os.path.join(folder, "served.pt2")
        served = fn(model, inputs["example"].clone(), path)
        modes_after = [bool(m.training) for m in model.modules()]
        with torch.no_grad():                       # the program must not depend on the model any more
            for p in model.parameters():
                p.zero_()
            for name, b in model.named_buffers():
                if name.endswith("running_mean"):
                    b.zero_()
                elif name.endswith("running_var"):
                    b.fill_(1.0)
        first = plain(served(inputs["new"].clone()))
        second = plain(served(inputs["new"].clone()))
        from_file = attempt(lambda: plain(_export_load(path).module()(inputs["new"].clone()))) \
            if _isfile(path) else {"error": "no file at path"}
        return {"first": first, "second": second, "from_file": from_file, "modes_after": modes_after}

    def dynamic():
        model = _plain_mlp(inputs["mlp_state"]).eval()
        fixed = fn(model, inputs["example"].clone(), os.path.join(folder, "fixed.pt2"))
        flexible = fn(model, inputs["example"].clone(), os.path.join(folder, "dynamic.pt2"), dynamic_batch=True)
        result = {"fixed_same": attempt(lambda: plain(fixed(inputs["batches"]["8"].clone())))}
        try:
            fixed(inputs["batches"]["3"].clone())
            result["fixed_other_raised"] = False
        except Exception:
            result["fixed_other_raised"] = True
        result["dynamic"] = {size: attempt(lambda x=x: plain(flexible(x.clone()))) for size, x in inputs["batches"].items()}
        return result

    return {"matches": attempt(matches), "dynamic": attempt(dynamic)}
