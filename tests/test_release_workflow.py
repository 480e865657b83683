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
import gc

import pytest
import torch

from grader.checks import Evidence, probe_definitions, registry
from grader.checks.memory import WORKFLOW
from grader.samples import SAMPLES_DIR, solution_answers
from grader import course
from hosts import HOSTS
from utils.simulated_cuda import simulate_cuda

CHECKS = registry()["05_memory"]

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
    "imported_names": (SAMPLES_DIR / "05_memory" / "imports_by_name" / "release.py").read_text(),
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


def _grade(source: str, host: str = "this_machine") -> dict:
    namespace = {"torch": torch}
    exec(compile(source, "<answer>", "exec"), namespace)
    with HOSTS[host]():
        probe = probe_definitions("memory")["release"](namespace, CHECKS.inputs()["release"])
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


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_a_real_gpu_each_wrong_workflow_reports_other_counters_than_the_correct_one():
    """The simulation's verdicts carry over: on the real caching allocator, every wrong workflow
    reports counters that differ from the correct workflow's in the same situation."""
    def run(source):
        namespace = {"torch": torch}
        exec(compile(source, "<answer>", "exec"), namespace)
        gc.collect()
        torch.cuda.empty_cache()
        gc.disable()
        try:
            warm = torch.empty(WORKFLOW["cached"], dtype=torch.uint8, device="cuda")
            del warm  # a cached block
            ns = {"model": torch.empty(WORKFLOW["model"], dtype=torch.uint8, device="cuda"),
                  "keep": torch.empty(WORKFLOW["keep"], dtype=torch.uint8, device="cuda"), "trainer": {}}
            ns["trainer"]["self"] = ns["trainer"]
            ns["trainer"]["state"] = torch.empty(WORKFLOW["cycle"], dtype=torch.uint8, device="cuda")
            return namespace["release"](ns, "model", "trainer")
        finally:
            gc.enable()
            gc.collect()

    correct = run(CORRECT["solution"])
    assert correct["allocated_before"] - correct["allocated_after"] >= WORKFLOW["model"] + WORKFLOW["cycle"]
    for name, (answer, _) in WRONG.items():
        if name != "made_up_numbers":
            assert run(answer) != correct, name
