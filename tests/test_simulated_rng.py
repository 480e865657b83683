"""Saving every GPU's generator (00, `save_rng_states` / `restore_rng_states`) is graded on any machine.

``simulate_cuda_rng()`` (utils/simulated_cuda.py) makes torch.cuda's random number API see two GPUs
whose generators are CPU stand-ins, so torch's own functions run on them. Here the simulation is
tested directly, then the rng_states probe and its trusted checks run in-process on answers in
several styles: every correct one passes every test, and each wrong one loses the test for the
behaviour it gets wrong, with the same verdicts on this machine as on one with a GPU (tests/hosts.py;
the probe runs the functions as on a machine without a GPU, utils.simulated_cuda.without_cuda, and
the two-GPU clause on the simulation). On a machine with CUDA the correct answers also run on the
real GPUs.
"""
import random

import numpy as np
import pytest
import torch

from grader import course
from grader.checking import Evidence, probe_definitions, registry
from grader.course import ASSIGNMENTS_DIR
from grader.sample_submissions import solution_answers
from hosts import HOSTS
from utils.simulated_cuda import simulate_cuda, simulate_cuda_rng, without_cuda

CHECKS = registry()["00_measure_first"]
RNG_TESTS = ("test_rng_states_restore", "test_rng_states_snapshot", "test_rng_states_all_gpus")


def _answer(save_cuda: str, restore_cuda: str) -> str:
    """Python's, NumPy's and torch's CPU states handled correctly; the GPU part as given."""
    return f'''
def save_rng_states():
    states = {{"random": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}}
    {save_cuda}
    return states

def restore_rng_states(states):
    random.setstate(states["random"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    {restore_cuda}
'''


CORRECT = {
    "solution": solution_answers(course.find("00_measure_first"))["rng_states"],
    "other_style": (ASSIGNMENTS_DIR / "00_measure_first" / "samples" / "other_style" / "rng_states.py").read_text(),
    "device_strings": _answer(
        'states["cuda"] = [torch.cuda.get_rng_state(f"cuda:{i}") for i in range(torch.cuda.device_count())]',
        'for i, s in enumerate(states["cuda"]): torch.cuda.set_rng_state(s, torch.device("cuda", i))'),
    "random_module": _answer('states["cuda"] = torch.cuda.random.get_rng_state_all()',
                             'torch.cuda.random.set_rng_state_all(states["cuda"])'),
    "default_generators": _answer('states["cuda"] = [g.get_state() for g in torch.cuda.default_generators]',
                                  'for g, s in zip(torch.cuda.default_generators, states["cuda"]): g.set_state(s)'),
    "device_context": '''
def save_rng_states():
    states = {"random": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(), "cuda": []}
    for i in range(torch.cuda.device_count() if torch.cuda.is_available() else 0):
        with torch.cuda.device(i):
            states["cuda"].append(torch.cuda.get_rng_state())
    return states

def restore_rng_states(states):
    random.setstate(states["random"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    for i, state in enumerate(states["cuda"]):
        torch.cuda.set_device(i)
        torch.cuda.set_rng_state(state)
''',
}

WRONG = {  # name -> (answer, the test it must fail, a phrase of that test's message)
    "current_device_only": (_answer('states["cuda"] = torch.cuda.get_rng_state() if torch.cuda.is_available() else None',
                                    'if states["cuda"] is not None: torch.cuda.set_rng_state(states["cuda"])'),
                            "test_rng_states_all_gpus", "GPU 1's generator"),
    "device_0_into_every_gpu": (_answer(
        'states["cuda"] = torch.cuda.get_rng_state(0) if torch.cuda.is_available() else None',
        'for i in range(torch.cuda.device_count()): torch.cuda.set_rng_state(states["cuda"], i)'),
        "test_rng_states_all_gpus", "GPU 1's generator"),
    "ignores_cuda": (_answer("", ""), "test_rng_states_all_gpus", "no GPU's generator"),
    "unguarded_cuda_call": (_answer('states["cuda"] = torch.cuda.get_rng_state()', ""),
                            "test_rng_states_restore", "without a GPU"),
    "no_numpy": ('''
def save_rng_states():
    return {"random": random.getstate(), "torch": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state_all()}

def restore_rng_states(states):
    random.setstate(states["random"])
    torch.set_rng_state(states["torch"])
    torch.cuda.set_rng_state_all(states["cuda"])
''', "test_rng_states_restore", "NumPy's global generator does not repeat"),
    "numpy_without_the_normal_cache": (_answer('states["mt"] = np.random.mtrand._rand._bit_generator.state',
                                               'np.random.mtrand._rand._bit_generator.state = states["mt"]')
                                       .replace('"numpy": np.random.get_state(), ', "")
                                       .replace('np.random.set_state(states["numpy"])', ""),
                                       "test_rng_states_restore", "NumPy's global generator does not repeat"),
    "reseeds_on_save": ('''
def save_rng_states():
    seed = random.randrange(2**32)
    random.seed(seed); np.random.seed(seed); torch.manual_seed(seed)
    return {"seed": seed}

def restore_rng_states(states):
    random.seed(states["seed"]); np.random.seed(states["seed"]); torch.manual_seed(states["seed"])
''', "test_rng_states_restore", "saving must only read"),
    "shared_snapshot": ((ASSIGNMENTS_DIR / "00_measure_first" / "samples" / "shared_snapshot" / "rng_states.py").read_text(),
                        "test_rng_states_snapshot", "independent snapshot"),
    "uses_up_the_snapshot": (_answer('states["cuda"] = torch.cuda.get_rng_state_all()',
                                     'torch.cuda.set_rng_state_all(states.pop("cuda"))'),
                             "test_rng_states_snapshot", "twice"),
    "closures": ('''
def save_rng_states():
    py, nps, cpu = random.getstate(), np.random.get_state(), torch.get_rng_state()
    gpus = torch.cuda.get_rng_state_all()
    return {"restore": lambda: (random.setstate(py), np.random.set_state(nps), torch.set_rng_state(cpu),
                                torch.cuda.set_rng_state_all(gpus))}

def restore_rng_states(states):
    states["restore"]()
''', "test_rng_states_snapshot", "pickle"),
}


def _grade(source: str, host: str = "this_machine") -> dict:
    namespace = {"random": random, "np": np, "torch": torch}
    exec(compile(source, "<answer>", "exec"), namespace)
    inputs = CHECKS.inputs()
    with HOSTS[host]():
        probe = probe_definitions(CHECKS.folder)["rng_states"](namespace, inputs["rng_states"])
    verdicts = CHECKS.judge(Evidence(probes={"rng_states": probe}), inputs)
    return {k: verdicts[k] for k in RNG_TESTS}


@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize("name", sorted(CORRECT))
def test_correct_answers_in_any_style_pass_every_rng_test(name, host):
    verdicts = _grade(CORRECT[name], host)
    assert {k: v.message for k, v in verdicts.items() if v.fraction < 1} == {}


@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize("name", sorted(WRONG))
def test_each_wrong_answer_loses_the_test_of_what_it_gets_wrong(name, host):
    answer, test, phrase = WRONG[name]
    verdict = _grade(answer, host)[test]
    assert verdict.fraction == 0 and phrase in verdict.message, verdict.message


@pytest.mark.parametrize("name", sorted(CORRECT) + sorted(WRONG))
def test_every_answer_gets_the_same_verdicts_with_a_gpu_or_without(name):
    answer = CORRECT[name] if name in CORRECT else WRONG[name][0]
    verdicts = {host: _grade(answer, host) for host in HOSTS}
    assert verdicts["gpu_host"] == verdicts["this_machine"]


# torch.accelerator.random (get_rng_state(i) and the rest) exists in torch 2.14.1, not in 2.11: where it
# exists, it too must find no GPU inside without_cuda(); found by looking, not by the version.
_ACCELERATOR_RANDOM = getattr(torch.accelerator, "random", None)
ACCELERATOR_RNG = () if _ACCELERATOR_RANDOM is None else (lambda: _ACCELERATOR_RANDOM.get_rng_state(0),
                                                         lambda: _ACCELERATOR_RANDOM.initial_seed(0))


def test_without_cuda_a_machine_with_a_gpu_in_use_has_none():
    """The view the probes grade in, over the GPU host of the tests above: nothing of its GPU shows,
    the simulations still work on top of it, and everything comes back on exit."""
    names = ("is_available", "device_count", "get_rng_state", "memory_allocated", "memory_stats", "empty_cache")
    with HOSTS["gpu_host"]():
        host = {name: getattr(torch.cuda, name) for name in names}
        generators, queued = torch.cuda.default_generators, list(torch.cuda._queued_calls)
        assert torch.cuda.is_available() and torch.cuda.memory_allocated() > 0 and len(generators) == 1
        with without_cuda():
            assert not torch.cuda.is_available() and not torch.accelerator.is_available()
            assert torch.cuda.device_count() == torch.accelerator.device_count() == 0
            assert torch.cuda.default_generators == () and torch.cuda.get_rng_state_all() == []
            assert torch.cuda.memory_allocated() == torch.cuda.memory_reserved() == 0
            assert torch.accelerator.memory_allocated() == torch.accelerator.memory_reserved() == 0
            assert torch.cuda.memory_stats() == {} and torch.cuda.empty_cache() is None
            for start_cuda in (torch.cuda.get_rng_state, torch.cuda.random.get_rng_state, torch.cuda.current_device,
                               torch.cuda.synchronize, torch.cuda.initial_seed, torch.accelerator.current_device_index,
                               lambda: torch.cuda.device(0).__enter__(), *ACCELERATOR_RNG):
                with pytest.raises(RuntimeError, match="no NVIDIA driver"):
                    start_cuda()
            torch.cuda.set_rng_state(torch.zeros(8, dtype=torch.uint8))  # queued for a GPU that never starts
            torch.cuda.manual_seed_all(3)
            with simulate_cuda_rng(devices=2) as sim:
                assert torch.cuda.device_count() == 2 and torch.equal(torch.cuda.get_rng_state(1), sim.states()[1])
            with simulate_cuda(cached_bytes=1000):
                assert torch.cuda.is_available() and torch.cuda.memory_reserved() == 1024
            assert not torch.cuda.is_available() and torch.cuda.default_generators == ()
        assert {name: getattr(torch.cuda, name) for name in names} == host
        assert torch.cuda.default_generators is generators and torch.cuda._queued_calls == queued


def test_the_simulation_serves_torch_cuda_random_api():
    generators = [torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)]
    with simulate_cuda_rng(generators=generators) as sim:
        assert torch.cuda.is_available() and torch.cuda.device_count() == 2 and torch.cuda.current_device() == 0
        assert sim.generators == tuple(generators) and torch.cuda.default_generators == sim.generators
        assert all(torch.equal(a, b) for a, b in zip(torch.cuda.get_rng_state_all(), sim.states()))
        assert torch.equal(torch.cuda.get_rng_state("cuda:1"), generators[1].get_state())
        with torch.cuda.device(1):
            assert torch.cuda.current_device() == 1
            assert torch.equal(torch.cuda.get_rng_state(), generators[1].get_state())
        assert torch.cuda.current_device() == 0
        torch.manual_seed(7)  # seeds every (simulated) GPU too, as on a real machine
        assert [g.initial_seed() for g in generators] == [7, 7] and torch.cuda.initial_seed() == 7
        before = sim.states()
        with torch.random.fork_rng(devices=[0, 1]):
            sim.draw(5)
        assert all(torch.equal(a, b) for a, b in zip(before, sim.states()))
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            torch.cuda.set_device(2)


def test_the_simulation_restores_torch_cuda_on_exit():
    originals = {name: getattr(torch.cuda, name) for name in ("is_available", "device_count", "is_initialized")}
    random_device_count, generators = torch.cuda.random.device_count, torch.cuda.default_generators
    with pytest.raises(ValueError), simulate_cuda_rng(devices=3):
        assert torch.cuda.device_count() == 3
        raise ValueError("an error inside the simulation")
    assert {name: getattr(torch.cuda, name) for name in originals} == originals
    assert torch.cuda.random.device_count is random_device_count and torch.cuda.default_generators is generators


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", sorted(CORRECT))
def test_on_real_gpus_correct_answers_restore_every_device(name):
    namespace = {"random": random, "np": np, "torch": torch}
    exec(compile(CORRECT[name], "<answer>", "exec"), namespace)
    devices = range(torch.cuda.device_count())
    draw = lambda: [torch.rand(3, device=f"cuda:{i}").cpu() for i in devices] + [torch.rand(3)]
    draw()
    states = namespace["save_rng_states"]()
    expected = draw()
    draw()
    namespace["restore_rng_states"](states)
    assert all(torch.equal(a, b) for a, b in zip(draw(), expected))
