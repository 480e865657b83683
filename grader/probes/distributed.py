"""Probes for 10_distributed (run in the sandbox; see common.py).

gather_padded runs on REAL process groups: the sandbox's process is forked into 2 or 3 ranks that
join a gloo group over the sandbox's own loopback interface (utils.distributed.run_ranks). Each
rank adds a random offset, drawn after the fork, to the tensor the grader chose for it, so no rank
can know another rank's tensor without communicating; the rank reports its offset and the
trusted check recomputes every expected tensor from its own inputs and the reported offsets.
"""
import os

import torch
import torch.distributed as dist

from utils.distributed import run_ranks as _run_ranks

_urandom = os.urandom  # bound before any student code runs
_TIMEOUT_S = 30.0      # one whole run of ranks
_COLLECTIVE_S = 6.0    # a collective waiting for a rank that never comes gives up after this


def _offset() -> int:
    return int.from_bytes(_urandom(2), "little") % 997 + 1


def _report(result):
    if type(result) is not list:
        return {"type": type(result).__name__}
    return {"type": "list", "tensors": [plain(t) for t in result]}


def _gather_run(fn, cases, world_size, members=None):
    """Every case on one process group; rank r's report per case: its offset and what fn returned."""

    def rank_main(rank, world):
        group = dist.new_group(members) if members is not None else None
        if members is not None and rank not in members:
            return None
        reports = []
        for case in cases:
            offset = _offset()
            mine = case[rank] + torch.tensor(offset, dtype=case[rank].dtype)
            result = fn(mine, group) if members is not None else fn(mine)
            reports.append({"offset": offset, **_report(result)})
        return reports

    return _run_ranks(rank_main, world_size, timeout=_TIMEOUT_S, collective_timeout=_COLLECTIVE_S)


def gather_padded(namespace, inputs):
    fn = lookup(namespace, "gather_padded")
    return {
        "one_dim": attempt(_gather_run, fn, inputs["one_dim"], 2),
        "n_dim": attempt(_gather_run, fn, inputs["n_dim"], 2),
        "group": attempt(_gather_run, fn, [inputs["group"]["tensors"]], inputs["group"]["world_size"],
                         inputs["group"]["members"]),
    }


def _indices(fn, n, rank, world_size, epoch, seed, shuffle):
    result = fn(n, rank, world_size, epoch=epoch, seed=seed, shuffle=shuffle)
    if type(result) is not list:
        return f"<not a list: {type(result).__name__}>"
    return [i if type(i) is int else f"<{type(i).__name__}>" for i in result]


def shard_indices(namespace, inputs):
    fn = lookup(namespace, "shard_indices")
    return {name: [attempt(_indices, fn, *args) for args in grid] for name, grid in inputs.items()}
