"""utils.distributed: real gloo process groups started from the current process."""
import socket
import sys
import time

import pytest
import torch
import torch.distributed as dist

from utils import bench, distributed

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="run_ranks forks")


def _gather_ranks(rank, world):
    out = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(out, torch.tensor([10 * rank]))
    return {"rank": rank, "world": world, "seen": torch.cat(out)}


def test_run_ranks_returns_each_ranks_result_in_rank_order():
    results = distributed.run_ranks(_gather_ranks, world_size=3)
    assert [r["rank"] for r in results] == [0, 1, 2]
    assert all(r["world"] == 3 for r in results)
    for r in results:
        assert torch.equal(r["seen"], torch.tensor([0, 10, 20]))


def _fails_on_rank_1(rank, world):
    if rank == 1:
        raise ValueError("rank one refuses")
    dist.barrier()
    return rank


def test_a_failing_rank_raises_rank_error_naming_it():
    start = time.monotonic()
    with pytest.raises(distributed.RankError, match="rank 1: ValueError: rank one refuses"):
        distributed.run_ranks(_fails_on_rank_1, world_size=2, collective_timeout=5)
    assert time.monotonic() - start < 20  # the waiting rank learns at once that its peer is gone


def _late_subgroup(rank, world):
    if rank == 0:
        return None                      # in no subgroup: done at once
    time.sleep(1.0)                      # the others are slower (a loaded machine)
    group = dist.new_group([1, 2], use_local_synchronization=True)   # its members meet through the store
    total = torch.tensor([float(rank)])
    dist.all_reduce(total, group=group)
    return total.item()


def test_a_rank_that_finishes_first_waits_for_the_others_before_it_leaves():
    """Rank 0 holds the group's store (creating a subgroup meets there, even one it is not in):
    leaving early would cut the other ranks off."""
    assert distributed.run_ranks(_late_subgroup, world_size=3) == [None, 3.0, 3.0]


def _not_plain(rank, world):
    return object()


def test_results_must_be_plain_data():
    with pytest.raises(distributed.RankError, match="not plain data"):
        distributed.run_ranks(_not_plain, world_size=2)


def _sleeps(rank, world):
    time.sleep(60)


def test_a_hanging_rank_is_stopped_at_the_deadline():
    start = time.monotonic()
    with pytest.raises(distributed.RankError, match="did not finish within"):
        distributed.run_ranks(_sleeps, world_size=2, timeout=2)
    assert time.monotonic() - start < 15


def _prints(rank, world):
    print("from a rank")
    print("to stderr", file=sys.stderr)
    return rank


def test_ranks_print_nothing_into_the_parent(capfd):
    assert distributed.run_ranks(_prints, world_size=2) == [0, 1]
    out, err = capfd.readouterr()
    assert "from a rank" not in out and "to stderr" not in err


def test_torchrun_command_and_worker_env():
    command = distributed.torchrun_command("train.py", "out", "--quick", nproc=3, port=29999)
    assert command[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert "--nproc-per-node=3" in command and "--master-port=29999" in command
    assert command[-3:] == ["train.py", "out", "--quick"]
    env = distributed.worker_env(threads=2)
    assert env["OMP_NUM_THREADS"] == "2"
    assert env["GLOO_SOCKET_IFNAME"] in {name for _, name in socket.if_nameindex()} | {"lo"}
    port = distributed.free_port()
    assert 0 < port < 65536


def test_torchrun_command_for_a_module():
    command = distributed.torchrun_command("utils.distributed", "serve", "dir", nproc=2, port=29998, module=True)
    assert command[-5:] == ["--master-port=29998", "-m", "utils.distributed", "serve", "dir"]


SCALE = 3


def _helper(x):
    return x * SCALE


@torch.no_grad()
def _shipped(n):
    return _helper(torch.arange(n)).tolist()


def test_shipped_source_carries_imports_constants_and_the_functions_it_calls():
    source = distributed.shipped_source(_shipped)
    assert "import torch" in source and "SCALE = 3" in source
    assert source.index("def _helper") < source.index("def _shipped")   # in dependency order
    namespace = {}
    exec(source, namespace)
    assert namespace["_shipped"](3) == [0, 3, 6]


TENSOR = torch.ones(2)


def _uses_a_tensor():
    return TENSOR.sum()


def test_shipped_source_refuses_what_cannot_travel():
    with pytest.raises(TypeError, match="'TENSOR', a Tensor"):
        distributed.shipped_source(_uses_a_tensor)


def _join():
    dist.init_process_group("gloo")
    return dist.get_rank()


def _all_reduce():
    t = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(t)
    return t


def _refuses():
    if dist.get_rank() == 1:
        raise ValueError("rank one refuses")
    return "fine"


def _compared():
    t = torch.ones(1)
    return distributed.compare("T095", ("all_reduce", lambda: dist.all_reduce(t)), ("alone", lambda: t + 1),
                               alone=("alone",), options=bench.Options(title="lockstep", memory=False, record=False))


def test_compare_takes_bench_options_and_the_ranks_device():
    with pytest.raises(TypeError, match=r"pass options=bench.Options\(memory=...\)"):
        distributed.compare("T095", ("a", lambda: 1), ("b", lambda: 2), memory=False)
    with pytest.raises(ValueError, match=r"runs on each rank's device \(rank_device\(\)\), not on options.device='cuda'"):
        distributed.compare("T095", ("a", lambda: 1), ("b", lambda: 2), options=bench.Options(device="cuda"))


def test_ranks_run_notebook_functions_on_a_torchrun_job(monkeypatch):
    from utils import bench

    monkeypatch.setattr(bench, "_settings", dict(bench.QUICK))   # the job inherits the mode: --quick
    ranks = distributed.Ranks(nproc=2)
    try:
        assert "--quick" in ranks.command and ranks.command[-4:-2] == ["utils.distributed", "serve"]
        assert ranks.run(_join) == [0, 1]
        assert ranks.run(_all_reduce) == [[3.0], [3.0]]               # tensors come back as lists
        with pytest.raises(distributed.RankError, match="rank 1: ValueError: rank one refuses"):
            ranks.run(_refuses)
        card = distributed.card(ranks.run(_compared))                 # rank 0 measured, rank 1 kept in step
        assert [row.label for row in card.rows] == ["all_reduce", "alone"] and card.quick
    finally:
        folder = ranks.folder
        assert ranks.stop() == 0
    assert not folder.exists()
