"""Checks for 10_distributed: gather_padded (T099, on real process groups) and shard_indices (T097)."""
from __future__ import annotations

import torch
from torch.utils.data import DistributedSampler

from . import AssignmentChecks, Evidence, Fail, equal, expect, uses, value

GATHER_OPS = {"all_gather", "all_gather_into_tensor"}
GROUP = {"world_size": 3, "members": [0, 2]}


def inputs() -> dict:
    g = torch.Generator().manual_seed(1010)

    def floats(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    def ints(*shape):
        return torch.randint(-50, 50, shape, generator=g, dtype=torch.int64)

    group_tensors = [floats(3, 2), None, floats(1, 2)]
    return {
        "gather_padded": {
            "one_dim": [[floats(3), floats(6)], [floats(6), floats(2)], [floats(4), floats(4)],
                        [floats(5, dtype=torch.float64), floats(1, dtype=torch.float64)]],
            "n_dim": [[ints(0, 2, 3), ints(3, 2, 3)], [floats(4, 3, 2), floats(1, 3, 2)]],
            "group": {**GROUP, "tensors": group_tensors},
        },
        "shard_indices": {
            "split": [[n, rank, world, 0, 0, False] for n, world in [(8, 2), (9, 2), (10, 4), (7, 3), (3, 5), (2, 5)]
                      for rank in range(world)],
            "epochs": [[n, rank, world, epoch, seed, True]
                       for n, world, seed in [(11, 2, 0), (16, 4, 7), (10, 3, 123), (3, 4, 5)]
                       for epoch in (0, 1, 2, 5) for rank in range(world)],
        },
    }


# ---- gather_padded ---------------------------------------------------------------------------

def _check_runs(reports, cases: list, members: list[int], what: str) -> None:
    """Every member's list must be every member's (offset-shifted) tensor, in rank order."""
    expect(type(reports) is list and all(reports[r] is not None for r in members),
           f"{what}: some ranks sent no result")
    for c, case in enumerate(cases):
        expected = []
        for rank in members:
            offset = reports[rank][c]["offset"]
            expect(type(offset) is int and 1 <= offset <= 997, f"{what}: malformed report")
            expected.append(case[rank] + torch.tensor(offset, dtype=case[rank].dtype))
        shapes = [tuple(t.shape) for t in expected]
        for rank in members:
            got = reports[rank][c]
            expect(got["type"] == "list", f"{what}, rank {rank}: gather_padded should return a list, got {got['type']}")
            tensors = got["tensors"]
            expect(len(tensors) == len(members),
                   f"{what}, rank {rank}: expected {len(members)} tensors (one per rank of the group), got {len(tensors)}")
            for k, (actual, want) in enumerate(zip(tensors, expected)):
                equal(actual, want, f"{what} (shapes {shapes}), rank {rank}, entry {k}")


def _gather(evidence: Evidence, part: str, what: str):
    return value(evidence.probe("gather_padded")[part], what)


def gather_1d(evidence: Evidence, inputs: dict) -> None:
    source = evidence.sources.get("gather_padded", "")
    expect(bool(uses(source, GATHER_OPS)), "gather_padded must pad and use dist.all_gather (or "
           "all_gather_into_tensor); all_gather_object does not count")
    what = "1-D tensors of different lengths on 2 processes"
    _check_runs(_gather(evidence, "one_dim", what), inputs["gather_padded"]["one_dim"], [0, 1], what)


def gather_nd(evidence: Evidence, inputs: dict) -> None:
    what = "N-D tensors (an empty one, integer and float dtypes) on 2 processes"
    _check_runs(_gather(evidence, "n_dim", what), inputs["gather_padded"]["n_dim"], [0, 1], what)


def gather_group(evidence: Evidence, inputs: dict) -> None:
    spec = inputs["gather_padded"]["group"]
    what = (f"a group of ranks {spec['members']} out of {spec['world_size']} processes "
            "(every collective must run on the group)")
    try:
        reports = _gather(evidence, "group", what)
    except Fail as failure:
        raise Fail(f"{failure} (pass the group to every collective, and count its members with "
                   "dist.get_world_size(group))") from None
    _check_runs(reports, [spec["tensors"]], spec["members"], what)


# ---- shard_indices ---------------------------------------------------------------------------

def _sampler(n: int, rank: int, world: int, epoch: int, seed: int, shuffle: bool) -> list[int]:
    sampler = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=shuffle, seed=seed)
    sampler.set_epoch(epoch)
    return list(sampler)


def _check_indices(evidence: Evidence, inputs: dict, part: str) -> None:
    expect(not uses(evidence.sources.get("shard_indices", ""), {"DistributedSampler"}),
           "shard_indices must compute the indices itself, without DistributedSampler")
    results = evidence.probe("shard_indices")[part]
    for args, got in zip(inputs["shard_indices"][part], results, strict=True):
        n, rank, world, epoch, seed, shuffle = args
        call = f"shard_indices({n}, {rank}, {world}, epoch={epoch}, seed={seed}, shuffle={shuffle})"
        got = value(got, call)
        expect(type(got) is list and all(type(i) is int for i in got), f"{call} should return a list of ints, "
               f"got {str(got)[:80]}")
        want = _sampler(n, rank, world, epoch, seed, shuffle)
        if got != want:
            raise Fail(f"{call} returned {got[:12]}{' ...' if len(got) > 12 else ''}, "
                       f"DistributedSampler gives {want[:12]}{' ...' if len(want) > 12 else ''}")


def shards_split(evidence: Evidence, inputs: dict) -> None:
    _check_indices(evidence, inputs, "split")


def shards_epochs(evidence: Evidence, inputs: dict) -> None:
    _check_indices(evidence, inputs, "epochs")


CHECKS = AssignmentChecks(
    assignment="10_distributed",
    probe_module="distributed",
    inputs=inputs,
    tests={
        "test_gather_padded_1d": gather_1d,
        "test_gather_padded_nd": gather_nd,
        "test_gather_padded_group": gather_group,
        "test_shard_indices_split": shards_split,
        "test_shard_indices_epochs": shards_epochs,
    },
)
