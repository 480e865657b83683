"""The empty_cache workflow (05, `release`) is graded on what it does, on any machine.

The release probe runs each answer against the simulated caching allocator
(utils/simulated_cuda.py); the trusted check compares the reported counters and the logged
order of events with what each step should produce. Here the probe and the check run in-process
on answers in several styles: every correct one passes, and every way of skipping, misordering
or faking a step fails `test_release_workflow`. Each answer gets the same verdicts on this machine
as on one with a GPU in use (tests/hosts.py; the probe runs release() as on a machine without a
GPU, utils.simulated_cuda.without_cuda). On a machine with CUDA the same answers also run against
the real allocator.
"""
import functools
import gc

import pytest
import torch

from grader.checking import Evidence, checks_module, probe_definitions, registry
from grader.course import ASSIGNMENTS_DIR
from grader.sample_submissions import solution_answers
from grader import course
from hosts import HOSTS
from utils.simulated_cuda import simulate_cuda

CHECKS = registry()["05_memory"]
WORKFLOW = checks_module("05_memory").WORKFLOW

_CHECK_NAMES = '''
    missing = [n for n in names if n not in namespace]
    if missing:
        raise KeyError(missing[0])
'''
_COUNTERS = '''
    cuda = torch.cuda.is_available()
    read = lambda: (torch.cuda.memory_allocated(), torch.cuda.memory_reserved()) if cuda else (0, 0)
'''
_REPORT = '''
    return {"allocated_before": before[0], "reserved_before": before[1],
            "allocated_after": after[0], "reserved_after": after[1]}
'''


def _answer(body: str) -> str:
    return "import gc\nimport torch\n\ndef release(namespace, *names):\n" + _CHECK_NAMES + _COUNTERS + body + _REPORT


CORRECT = {
    "solution": solution_answers(course.find("05_memory"))["release"],
    "memory_stats": _answer('''
    stats = lambda: torch.cuda.memory_stats() if cuda else {}
    s = stats()
    before = (s.get("allocated_bytes.all.current", 0), s.get("reserved_bytes.all.current", 0))
    for n in names:
        namespace.pop(n)
    gc.collect()
    torch.cuda.empty_cache() if cuda else None
    s = stats()
    after = (s.get("allocated_bytes.all.current", 0), s.get("reserved_bytes.all.current", 0))
'''),
    "accelerator_api": _answer('''
    acc = torch.accelerator
    before = (acc.memory_allocated(), acc.memory_reserved()) if acc.is_available() else (0, 0)
    for n in names:
        del namespace[n]
    gc.collect()
    if acc.is_available():
        acc.empty_cache()
    after = (acc.memory_allocated(), acc.memory_reserved()) if acc.is_available() else (0, 0)
'''),
    # torch.cuda's functions imported by name: the simulations replace module attributes, and reach
    # these names through utils.simulated_cuda.calls_through (a bundled sample)
    "imported_names": (ASSIGNMENTS_DIR / "05_memory" / "samples" / "imports_by_name" / "release.py").read_text(),
}

WRONG = {  # name -> (answer, a phrase the check's message must contain)
    "no_empty_cache": (_answer('''
    before = read()
    for n in names:
        del namespace[n]
    gc.collect()
    after = read()
'''), "never called"),
    "empty_cache_first": (_answer('''
    before = read()
    if cuda:
        torch.cuda.empty_cache()
    for n in names:
        del namespace[n]
    gc.collect()
    after = read()
'''), "before everything was freed"),
    "collect_after_empty_cache": (_answer('''
    before = read()
    for n in names:
        del namespace[n]
    if cuda:
        torch.cuda.empty_cache()
    gc.collect()
    after = read()
'''), "before everything was freed"),
    "no_collect": (_answer('''
    before = read()
    for n in names:
        del namespace[n]
    if cuda:
        torch.cuda.empty_cache()
    after = read()
'''), "gc.collect()"),
    "reads_before_after_deleting": (_answer('''
    for n in names:
        del namespace[n]
    before = read()
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    after = read()
'''), "not read before"),
    "reads_after_before_emptying": (_answer('''
    before = read()
    for n in names:
        del namespace[n]
    gc.collect()
    after = read()
    if cuda:
        torch.cuda.empty_cache()
'''), "not read again after"),
    "hard_coded_zeros": (_answer('''
    for n in names:
        del namespace[n]
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    before = after = (0, 0)
'''), "not read"),
    "made_up_numbers": (_answer(f'''
    before = read()
    for n in names:
        del namespace[n]
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    after = (read()[0], {WORKFLOW["keep"] // 2})
'''), "reserved_after"),
}


@pytest.fixture(scope="module", autouse=True)
def _frozen_heap():
    """The probe calls gc.collect() several times per answer, and in the test process each call
    walks every object the session has made so far (a fifth of a second or more). Objects that
    exist before this module runs are frozen (gc.freeze), so a collection walks only the answer's."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


@functools.cache
def _grade(source: str, host: str = "this_machine") -> dict:
    """The release tests' verdicts for one answer on one host, graded once per session (the
    same-verdicts test below compares the gradings the other tests made)."""
    namespace = {"torch": torch}
    exec(compile(source, "<answer>", "exec"), namespace)
    with HOSTS[host]():
        probe = probe_definitions(CHECKS.folder)["release"](namespace, CHECKS.inputs()["release"])
    verdicts = CHECKS.judge(Evidence(probes={"release": probe}), CHECKS.inputs())
    return {k: v for k, v in verdicts.items() if k.startswith("test_release")}


@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize("name", sorted(CORRECT))
def test_correct_answers_in_any_style_pass_every_release_test(name, host):
    verdicts = _grade(CORRECT[name], host)
    assert {k: v.message for k, v in verdicts.items() if v.fraction < 1} == {}


@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize("name", sorted(WRONG))
def test_each_wrong_workflow_loses_the_workflow_points(name, host):
    answer, phrase = WRONG[name]
    verdicts = _grade(answer, host)
    workflow = verdicts["test_release_workflow"]
    assert workflow.fraction == 0 and phrase in workflow.message, workflow.message
    assert verdicts["test_release_names"].fraction == 1  # the other release tests still see a working release()


UNGUARDED = _answer('''
    before = (torch.cuda.memory_allocated(), torch.cuda.memory_reserved())
    for n in names:
        del namespace[n]
    gc.collect()
    torch.cuda.empty_cache()
    after = (torch.cuda.memory_allocated(), torch.cuda.memory_reserved())
''')


@pytest.mark.parametrize("name", sorted(CORRECT) + sorted(WRONG) + ["unguarded"])
def test_every_answer_gets_the_same_verdicts_with_a_gpu_or_without(name):
    answer = {**CORRECT, **{k: a for k, (a, _) in WRONG.items()}, "unguarded": UNGUARDED}[name]
    verdicts = {host: _grade(answer, host) for host in HOSTS}
    assert verdicts["gpu_host"] == verdicts["this_machine"]


def test_on_a_machine_with_a_gpu_in_use_torch_reads_other_counters():
    """What the probe must not see: the GPU host of the tests above, outside the probe."""
    with HOSTS["gpu_host"]():
        assert torch.cuda.is_available() and torch.accelerator.is_available()
        assert torch.cuda.memory_allocated() == 32 * 2**20 and torch.cuda.memory_reserved() == 64 * 2**20
        assert torch.accelerator.memory_allocated() == 32 * 2**20
        assert torch.cuda.get_rng_state().dtype == torch.uint8


def test_the_simulation_counts_blocks_and_the_cache():
    with simulate_cuda(cached_bytes=1000) as sim:
        t = sim.tensor(1000, "t")
        assert torch.cuda.is_available() and torch.cuda.memory_allocated() == 1024
        assert torch.cuda.memory_reserved() == 2048
        del t
        gc.collect()
        assert torch.cuda.memory_allocated() == 0 and torch.cuda.memory_reserved() == 2048
        torch.cuda.empty_cache()
        assert torch.cuda.memory_reserved() == 0
    assert ("free", "t") in sim.events
    assert torch.cuda.memory_allocated is not sim.memory_allocated  # restored on exit


MiB = 2**20


def _situation(free_elsewhere: int = 0) -> dict:
    """The release situation with sizes a real caching allocator cannot blur. The probe's own
    (WORKFLOW: 5, 1, 3 and 7 MiB) fit in one 20 MiB segment, beside anything else the process holds:
    on the H100, after the correct workflow's empty_cache() that segment still held live blocks, and
    reserved memory did not move (102760448 bytes before and after), as without empty_cache(). Here
    each block is a large allocation (over 10 MiB: a segment of its own, sized in 2 MiB steps, so
    a multiple of 2 MiB fills it), larger than every free block the process's live segments hold
    (``free_elsewhere``) and than the cached block, so none is carved out of another segment: each
    freed block leaves a whole segment that empty_cache() returns."""
    unit = max(20 * MiB, -(-(free_elsewhere + 2 * MiB) // (2 * MiB)) * 2 * MiB)
    return {"cached": unit, "model": unit + 4 * MiB, "keep": unit + 2 * MiB, "cycle": unit + 6 * MiB}


def _run_in_situation(source: str, allocate, empty_cache, sizes: dict) -> dict:
    """``release(ns, "model", "trainer")`` of an answer, after: a freed (cached) block, then a
    model, a tensor it keeps, and a trainer in a reference cycle holding state. The automatic
    collector is paused, so only the answer's gc.collect() frees the cycle."""
    namespace = {"torch": torch}
    exec(compile(source, "<answer>", "exec"), namespace)
    gc.collect()
    empty_cache()
    gc.disable()
    try:
        warm = allocate(sizes["cached"])
        del warm  # a cached block
        ns = {"model": allocate(sizes["model"]), "keep": allocate(sizes["keep"]), "trainer": {}}
        ns["trainer"]["self"] = ns["trainer"]
        ns["trainer"]["state"] = allocate(sizes["cycle"])
        return namespace["release"](ns, "model", "trainer")
    finally:
        gc.enable()
        gc.collect()


def _each_wrong_workflow_differs(allocate, empty_cache, sizes: dict) -> None:
    run = lambda source: _run_in_situation(source, allocate, empty_cache, sizes)  # noqa: E731
    correct = run(CORRECT["solution"])
    freed = sizes["model"] + sizes["cycle"]
    assert correct["allocated_before"] - correct["allocated_after"] >= freed, correct
    assert correct["reserved_before"] - correct["reserved_after"] >= freed + sizes["cached"], correct
    for name, (answer, _) in WRONG.items():
        if name != "made_up_numbers":
            assert run(answer) != correct, name


def test_in_the_simulation_each_wrong_workflow_reports_other_counters_than_the_correct_one():
    """The real-GPU test below, on the simulated allocator (the probe's): the same situation and sizes."""
    with simulate_cuda() as sim:
        _each_wrong_workflow_differs(sim.tensor, torch.cuda.empty_cache, _situation())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_a_real_gpu_each_wrong_workflow_reports_other_counters_than_the_correct_one():
    """The simulation's verdicts carry over: on the real caching allocator, every wrong workflow
    reports counters that differ from the correct workflow's in the same situation, and the
    correct workflow's reserved memory falls by every block it freed and the cached one."""
    gc.collect()
    torch.cuda.empty_cache()     # what is left free sits in segments that also hold live blocks
    free_elsewhere = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
    _each_wrong_workflow_differs(lambda n: torch.empty(n, dtype=torch.uint8, device="cuda"),
                                 torch.cuda.empty_cache, _situation(free_elsewhere))
