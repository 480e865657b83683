"""Checks for 10_distributed: gather_padded (T099, on real process groups) and shard_indices (T097).

The evidence is what ran, recorded in the sandbox by a profiler bound before the answer's code
(probes.py beside this file), never a search of the source:

gather_padded, clause by clause (the exercise's markdown lists them):
  1. a list, one entry per member, in the group's rank order          -> every values test
  2. each entry: its rank's shape, dtype (float16, bfloat16, bool, int64 beyond 2**24 ...) and
     values, also when lengths are 0 on some ranks or on all           -> test_gather_padded_nd (1-D: _1d)
  3. `tensor` may be a non-contiguous view and is left unchanged       -> test_gather_padded_nd
  4. the data travels padded along the first dimension to the longest length, in its own
     dtype, through dist.all_gather / dist.all_gather_into_tensor: the gather's output holds every
     rank's rows                                                        -> every test (the route gate)
     only tensor collectives: no *_object collective, lengths included -> test_gather_padded_collectives
  5. every collective on `group`, its size the group's                 -> test_gather_padded_group
A value can only come from the route: each test first requires, for every case, a gather that
delivered every rank's (randomly shifted) rows, so an answer that gets the tensors another way
(all_gather_object under any name, all_reduce into slots, ...) earns nothing.

shard_indices:
  1. a list of Python ints, ceil(n / world_size) of them, n = 0 included -> both tests
  2. the order: 0 .. n-1, or randperm(n) from a Generator seeded seed + epoch -> _split / _epochs
  3. padding by repeating the order from its start, as often as needed  -> _split (and _epochs)
  4. rank r's share: every world_size-th index from position r          -> both tests
  5. the global RNG is left as it was                                   -> test_shard_indices_epochs
  6. DistributedSampler's code does not run (under any name)            -> both tests
"""
from __future__ import annotations

import math
from pathlib import Path

import torch
from torch.utils.data import DistributedSampler

from grader.checking import AssignmentChecks, Evidence, Fail, equal, expect, probe_definitions, value

GROUP = {"world_size": 3, "members": [0, 2]}


def _probe(name: str):
    return probe_definitions(Path(__file__).parent)[name]


def inputs() -> dict:
    g = torch.Generator().manual_seed(1010)

    def floats(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    def ints(*shape, high=50):
        return torch.randint(-high, high, shape, generator=g, dtype=torch.int64)

    def case(*tensors, strided=False):
        return {"tensors": list(tensors), "strided": strided}

    return {
        "gather_padded": {
            "one_dim": [case(floats(3), floats(6)), case(floats(6), floats(2)), case(floats(4), floats(4)),
                        case(floats(5, dtype=torch.float64), floats(1, dtype=torch.float64))],
            "n_dim": [case(ints(0, 2, 3), ints(3, 2, 3)), case(floats(4, 3, 2), floats(1, 3, 2)),
                      # int64 beyond float32's (and float64's) exact range
                      case(ints(2, 3, high=2**62), ints(4, 3, high=2**62)),
                      case(floats(3, 2, dtype=torch.bfloat16), floats(1, 2, dtype=torch.bfloat16)),
                      case(floats(2, 5, dtype=torch.float16), floats(4, 5, dtype=torch.float16)),
                      case(floats(1, 4) > 0, floats(3, 4) > 0),                          # bool
                      case(floats(0, 3), floats(0, 3)),                                  # every length 0
                      case(floats(3, 4), floats(3, 4), strided=True),                    # equal lengths, strided
                      case(floats(2, 3, 2, dtype=torch.float64), floats(5, 3, 2, dtype=torch.float64), strided=True)],
            "group": {**GROUP, "case": case(floats(3, 2), None, floats(1, 2))},
        },
        "shard_indices": {
            "split": [[n, rank, world, 0, 0, False] for n, world in
                      [(8, 2), (9, 2), (10, 4), (7, 3), (3, 5), (2, 5), (1, 3), (0, 3)] for rank in range(world)],
            "epochs": [[n, rank, world, epoch, seed, True]
                       for n, world, seed in [(11, 2, 0), (16, 4, 7), (10, 3, 123), (3, 4, 5), (2, 5, 9)]
                       for epoch in (0, 1, 2, 5) for rank in range(world)],
        },
    }


# ---- gather_padded ---------------------------------------------------------------------------

def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _describe_case(case: dict, members: list[int]) -> str:
    shapes = ", ".join(str(tuple(case["tensors"][r].shape)) for r in members)
    dtype = _dtype_name(case["tensors"][members[0]].dtype)
    return f"{dtype} tensors of shapes {shapes}{' (non-contiguous views)' if case['strided'] else ''}"


def _run(evidence: Evidence, part: str, what: str, members: list[int]):
    """Every member's list of per-case reports (a rank whose run stopped early has fewer)."""
    reports = value(evidence.probe("gather_padded")[part], what)
    expect(type(reports) is list and all(type(reports[r]) is list for r in members),
           f"{what}: some ranks sent no result")
    return reports


def _expected(case: dict, members: list[int], reports: list, c: int) -> list[torch.Tensor]:
    shift = _probe("_shift")
    expected = []
    for rank in members:
        offset = reports[rank][c]["offset"]
        expect(type(offset) is int and 1 <= offset <= 997, "malformed report from a rank")
        expected.append(shift(case["tensors"][rank], offset))
    return expected


def _delivered(record: dict, expected: list[torch.Tensor], longest: int) -> bool:
    """Whether one gather's output holds every member's rows, padded to ``longest`` rows (the padding
    after the rows or before them)."""
    out = record.get("out")
    if type(out) is not list or not all(type(t) is torch.Tensor for t in out):
        return False
    row = math.prod(expected[0].shape[1:])
    if record["name"] == "all_gather":
        if len(out) != len(expected):
            return False
        slots = [t.reshape(-1) for t in out]
    else:
        if len(out) != 1 or out[0].numel() != len(expected) * longest * row:
            return False
        slots = list(out[0].reshape(len(expected), longest * row))
    for slot, want in zip(slots, expected):
        if slot.dtype != want.dtype or slot.numel() != longest * row:
            return False
        size, rows = want.numel(), want.reshape(-1)
        if size and not (torch.equal(slot[:size], rows) or torch.equal(slot[-size:], rows)):  # padded after or before
            return False
    return True


def _route_hint(calls: list[dict], objects: list[str], dtype: torch.dtype, longest: int, row: int, group: str) -> str:
    top = [c for c in calls if not c.get("nested")]
    objects = sorted({c["name"] for c in calls if c["name"] in _probe("OBJECT_COLLECTIVES")} | set(objects))
    gathers = [c for c in top if c["name"] in _probe("GATHERS")]
    if objects:
        return f"{', '.join(objects)} ran: gather tensors, not Python objects"
    if not gathers:
        used = sorted({c["name"] for c in top})
        return (f"it called {', '.join(used)}, not dist.all_gather or dist.all_gather_into_tensor" if used else
                "no collective of torch.distributed ran at all")
    if all(c.get("group") != group for c in gathers):
        return "the gathers did not run on the process group given to gather_padded"
    size = longest * row
    if not any(c.get("numel") == size and c.get("dtype") == str(dtype) for c in gathers):
        other = sorted({str(c.get("dtype")) for c in gathers if c.get("numel") == size})
        if other:
            return (f"the padded tensors were gathered as {', '.join(other)}: pad and gather in the tensor's own "
                    f"dtype ({dtype}); a conversion can change values")
        return (f"no gather carried exactly the longest length in the tensor's dtype ({longest} rows of {row} "
                f"element(s), {dtype}; the gathers carried {_carried(gathers)}): pad the first dimension to the "
                "longest length, no more")
    return ("what the gather delivered did not hold every rank's rows, in order, before or after its padding: "
            "pad along the first dimension only")


def _carried(gathers: list[dict]) -> str:
    return ", ".join(f"{c.get('numel')} element(s) of {str(c.get('dtype')).removeprefix('torch.')}"
                     for c in gathers[:6])


def _check_route(case: dict, members: list[int], reports: list, c: int, what: str, group: str) -> None:
    """The pad-gather route for case ``c``: on every member, one gather of the padded tensors that
    delivered every member's rows (an all-empty case needs none)."""
    expected = _expected(case, members, reports, c)
    longest = max(t.shape[0] for t in expected)
    row = math.prod(expected[0].shape[1:])
    dtype = expected[0].dtype
    for rank in members:
        report = reports[rank][c]
        calls = report["calls"]
        expect(type(calls) is list, f"{what}: malformed report")
        expect(report.get("tampered") is False,
               f"{what}, rank {rank}: the answer touched Python's profiler (sys.setprofile) or started a thread or "
               "process while it ran; the grader watches what runs in the calling thread, so keep the work there")
        if longest == 0:
            continue
        if not any(call["name"] in _probe("GATHERS") and not call.get("nested") and call.get("group") == group
                   and call.get("dtype") == str(dtype) and call.get("numel") == longest * row
                   and _delivered(call, expected, longest) for call in calls):
            hint = _route_hint(calls, report.get("objects") or [], dtype, longest, row, group)
            raise Fail(f"{what}, rank {rank}: the tensors did not travel padded through dist.all_gather or "
                       f"dist.all_gather_into_tensor ({hint})")


def _cases(evidence: Evidence, inputs: dict, part: str, members: list[int], what: str, group: str = "default",
           complete: bool = True):
    """(case index, case, reports, description) for every case that ran; the route gate first."""
    cases = inputs["gather_padded"][part] if part != "group" else [inputs["gather_padded"]["group"]["case"]]
    reports = _run(evidence, part, what, members)
    for c, case in enumerate(cases):
        described = f"{what}, {_describe_case(case, members)}"
        for rank in members:
            if len(reports[rank]) <= c:
                if not complete:
                    return
                raise Fail(f"{described}: rank {rank} stopped before this case (an earlier case failed)")
            if "error" in reports[rank][c]:
                if not complete:
                    return
                stray = _stray(reports[rank][c].get("calls"), group)
                hint = f" ({', '.join(stray)} ran on another process group than the one given)" if stray else ""
                raise Fail(f"{described}, rank {rank}: your code raised {reports[rank][c]['error']}{hint}")
        _check_route(case, members, reports, c, described, group)
        yield c, case, reports, described


def _stray(calls, group: str) -> list[str]:
    """The collectives the answer itself called on another group than ``group``."""
    if type(calls) is not list:
        return []
    return sorted({call["name"] for call in calls if not call.get("nested") and call.get("group") != group})


def _check_values(case: dict, members: list[int], reports: list, c: int, what: str) -> None:
    expected = _expected(case, members, reports, c)
    for rank in members:
        got = reports[rank][c]
        expect(got.get("type") == "list",
               f"{what}, rank {rank}: gather_padded should return a list, got {got.get('type')}")
        tensors = got["tensors"]
        expect(len(tensors) == len(members),
               f"{what}, rank {rank}: expected {len(members)} tensors (one per rank of the group), got {len(tensors)}")
        for k, (actual, want) in enumerate(zip(tensors, expected)):
            equal(actual, want, f"{what}, rank {rank}, entry {k}")
        expect(got.get("unchanged") is True, f"{what}, rank {rank}: gather_padded changed the tensor it was given "
               "(its shape, dtype or values); leave it as it was")


def gather_1d(evidence: Evidence, inputs: dict) -> None:
    for c, case, reports, what in _cases(evidence, inputs, "one_dim", [0, 1], "1-D tensors on 2 processes"):
        _check_values(case, [0, 1], reports, c, what)


def gather_nd(evidence: Evidence, inputs: dict) -> None:
    for c, case, reports, what in _cases(evidence, inputs, "n_dim", [0, 1], "N-D tensors on 2 processes"):
        _check_values(case, [0, 1], reports, c, what)


def gather_group(evidence: Evidence, inputs: dict) -> None:
    members = GROUP["members"]
    what = (f"a group of ranks {members} out of {GROUP['world_size']} processes "
            "(every collective must run on the group)")
    try:
        for c, case, reports, described in _cases(evidence, inputs, "group", members, what, group="given"):
            for rank in members:
                stray = _stray(reports[rank][c]["calls"], "given")
                expect(not stray, f"{described}, rank {rank}: {', '.join(stray)} ran on another group than the one "
                       "given; pass group=group to every collective")
            _check_values(case, members, reports, c, described)
    except Fail as failure:
        raise Fail(f"{failure} (pass the group to every collective, and count its members with "
                   "dist.get_world_size(group))") from None


def gather_collectives(evidence: Evidence, inputs: dict) -> None:
    """The mechanism: on every case that ran, the padded tensors went through a tensor gather, and no
    collective sent Python objects (the lengths included)."""
    for part, what, complete in (("one_dim", "1-D tensors on 2 processes", True),
                                 ("n_dim", "N-D tensors on 2 processes", False)):
        for c, case, reports, described in _cases(evidence, inputs, part, [0, 1], what, complete=complete):
            for rank in (0, 1):
                used = reports[rank][c].get("objects")
                expect(type(used) is list, f"{described}: malformed report")
                expect(not used, f"{described}, rank {rank}: {', '.join(used)} ran; exchange only tensors (the "
                       "lengths too): dist.all_gather or dist.all_gather_into_tensor")


# ---- shard_indices ---------------------------------------------------------------------------

def _sampler(n: int, rank: int, world: int, epoch: int, seed: int, shuffle: bool) -> list[int]:
    sampler = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=shuffle, seed=seed)
    sampler.set_epoch(epoch)
    return list(sampler)


def _short(items: list) -> str:
    return f"{items[:12]}{' ...' if len(items) > 12 else ''}"


def _check_indices(evidence: Evidence, inputs: dict, part: str, rng: bool = False) -> None:
    results = evidence.probe("shard_indices")[part]
    expect(type(results) is list, "malformed result")
    for args, got in zip(inputs["shard_indices"][part], results, strict=True):
        n, rank, world, epoch, seed, shuffle = args
        call = f"shard_indices({n}, {rank}, {world}, epoch={epoch}, seed={seed}, shuffle={shuffle})"
        got = value(got, call)
        expect(type(got) is dict, f"{call}: malformed result")
        expect(got.get("sampler") is False, f"{call}: DistributedSampler's code ran during the call; compute "
               "the indices yourself (the grader sees what runs, under whatever name)")
        expect(got.get("tampered") is False, f"{call}: the answer touched Python's profiler (sys.setprofile) or "
               "started a thread or process while it ran; the grader watches what runs in the calling thread")
        if "error" in got:
            raise Fail(f"{call}: your code raised {got['error']}")
        result = got["result"]
        expect(type(result) is list and all(type(i) is int for i in result),
               f"{call} should return a list of Python ints, got {str(result)[:80]}")
        want = _sampler(n, rank, world, epoch, seed, shuffle)
        if result != want:
            raise Fail(f"{call} returned {_short(result)}, DistributedSampler gives {_short(want)}")
        if rng:
            expect(got.get("rng_kept") is True, f"{call} changed the global random number generator's state: "
                   "draw the permutation from your own torch.Generator, and leave the global RNG alone")


def shards_split(evidence: Evidence, inputs: dict) -> None:
    _check_indices(evidence, inputs, "split")


def shards_epochs(evidence: Evidence, inputs: dict) -> None:
    _check_indices(evidence, inputs, "epochs", rng=True)


CHECKS = AssignmentChecks(
    inputs=inputs,
    tests={
        "test_gather_padded_1d": gather_1d,
        "test_gather_padded_nd": gather_nd,
        "test_gather_padded_group": gather_group,
        "test_gather_padded_collectives": gather_collectives,
        "test_shard_indices_split": shards_split,
        "test_shard_indices_epochs": shards_epochs,
    },
)
