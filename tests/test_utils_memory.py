import warnings

import pytest
import torch

from utils.comparison import Timing
from utils.memory import CPU_METHOD, MPS_METHOD, held_memory, memory_note, peak_memory
from utils.memory_lessons import MiB as LESSON_MiB, counters_table, cuda_or_simulated, warned
from utils.present import Result
from utils.units import format_bytes

MiB = 2**20


def test_cpu_peak_counts_a_known_allocation():
    peak, method = peak_memory(lambda: torch.ones(1024, 1024), "cpu")  # 4 MiB of float32
    assert method == CPU_METHOD
    assert 4 * MiB <= peak < 4.5 * MiB


def test_cpu_peak_is_the_high_water_mark_not_the_sum():
    def two_temporaries_one_at_a_time():
        a = torch.ones(1024, 1024)   # 4 MiB
        total = a.sum()
        del a
        b = torch.ones(1024, 1024)   # another 4 MiB, after the first is freed
        return total + b.sum()

    def two_alive_together():
        a, b = torch.ones(1024, 1024), torch.ones(1024, 1024)
        return a.sum() + b.sum()

    sequential, _ = peak_memory(two_temporaries_one_at_a_time, "cpu")
    together, _ = peak_memory(two_alive_together, "cpu")
    assert 4 * MiB <= sequential < 5 * MiB
    assert 8 * MiB <= together < 9 * MiB


def test_in_place_op_allocates_nothing_new():
    x = torch.ones(1024, 1024)
    in_place, _ = peak_memory(lambda: x.mul_(1.0), "cpu")
    out_of_place, _ = peak_memory(lambda: x.mul(1.0), "cpu")
    assert in_place < 1024
    assert out_of_place >= 4 * MiB


def test_an_mps_peak_counts_only_mps_tensors():
    # No Mac here: what can be checked is that host tensors never inflate the Apple GPU's figure.
    peak, method = peak_memory(lambda: torch.ones(1024, 1024), "mps")
    assert (peak, method) == (0, MPS_METHOD)
    assert "MPS" in memory_note(method)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_peak_counts_a_known_allocation():
    peak, method = peak_memory(lambda: torch.ones(1024, 1024, device="cuda"), "cuda")
    assert method.startswith("torch.cuda")
    assert 4 * MiB <= peak < 4.5 * MiB


@pytest.mark.parametrize("n,text", [(None, "-"), (512, "512 B"), (1536, "1.5 KiB"), (5 * MiB, "5.0 MiB"),
                                    (3 * 2**30, "3.0 GiB"), (2**42, "4096.0 GiB")])
def test_format_bytes(n, text):
    assert format_bytes(n) == text


def test_freeing_an_older_tensor_is_silent_and_not_credited(capfd):
    holder = {"old": torch.ones(1024, 1024)}

    def drop_old_then_allocate():
        holder.pop("old")
        return torch.ones(256, 1024)  # 1 MiB

    peak, _ = peak_memory(drop_old_then_allocate, "cpu")
    assert 1 * MiB <= peak < 1.5 * MiB
    assert "allocated before the profiling started" not in capfd.readouterr().err


def test_freeing_a_tensor_allocated_under_an_earlier_profile_is_not_credited():
    # The allocator remembers the size of a block allocated while memory profiling was on and reports
    # its free in any later session; crediting that free turned this peak into 0 in a full test run.
    holder = {}
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True):
        holder["old"] = torch.ones(1024, 1024)

    def drop_old_then_allocate():
        holder.pop("old")
        return torch.ones(256, 1024)  # 1 MiB

    peak, _ = peak_memory(drop_old_then_allocate, "cpu")
    assert 1 * MiB <= peak < 1.5 * MiB


def test_held_memory_counts_what_the_result_keeps_not_the_temporaries():

    def keep_one_of_three():
        a, b = torch.ones(1024, 1024), torch.ones(1024, 1024)   # 8 MiB of temporaries
        kept = torch.ones(256, 1024)                              # 1 MiB returned
        return kept, (a + b).sum()

    held, method = held_memory(keep_one_of_three, "cpu")
    assert method == CPU_METHOD
    assert 1 * MiB <= held < 1.1 * MiB


def test_verdict_against_another_variant():
    rows = [Timing(n, m, 1e-6, 30, p, "m", {}, [m] * 3) for n, m, p in
            (("base", 4e-3, 400), ("pinned", 2e-3, 400), ("pinned+async", 1e-3, 100))]
    c = Result("T016", "copy", "cpu", "CPU", {}, rows)
    assert c.verdict("pinned+async").text == "4.00x as fast"
    assert c.verdict("pinned+async", against="pinned").text == "2.00x as fast"
    assert "25% of the baseline's peak memory" in c.memory_verdict("pinned+async", against="pinned").text
    assert c.memory_verdict("pinned", against="base").kind == "same memory"


def test_warned_shows_the_warnings_a_call_gives_or_the_error_it_raises():
    def warns():
        warnings.warn("use_reentrant should be passed. It will raise. Pass it. Really")
    assert warned(warns) == "UserWarning: use_reentrant should be passed. It will raise."
    assert warned(warns, sentences=1) == "UserWarning: use_reentrant should be passed."
    assert warned(lambda: 1) == "no warning"
    assert warned(lambda: 1 / 0) == "ZeroDivisionError: division by zero"


def test_counters_table_reads_each_step_and_brackets_what_it_moved():
    readings = {}
    with cuda_or_simulated(torch.device("cpu")) as gpu:     # no CUDA here: the simulated allocator
        readings["start"] = (torch.cuda.memory_allocated(), torch.cuda.memory_reserved())
        kept = gpu.tensor(2 * LESSON_MiB)
        readings["created"] = (torch.cuda.memory_allocated(), torch.cuda.memory_reserved())
        del kept
        readings["del"] = (torch.cuda.memory_allocated(), torch.cuda.memory_reserved())
        torch.cuda.empty_cache()
        readings["empty_cache()"] = (torch.cuda.memory_allocated(), torch.cuda.memory_reserved())
    rows = counters_table(readings, gpu).rows
    assert [r["step"] for r in rows] == ["start", "created", "del", "empty_cache()"]
    assert rows[1]["memory_allocated"] == "2.0 MiB (+2.0 MiB)" and rows[1]["memory_reserved"] == "2.0 MiB (+2.0 MiB)"
    assert rows[2]["memory_allocated"] == "0 B (-2.0 MiB)" and rows[2]["memory_reserved"] == "2.0 MiB"
    assert rows[3]["memory_allocated"] == "0 B" and rows[3]["memory_reserved"] == "0 B (-2.0 MiB)"
