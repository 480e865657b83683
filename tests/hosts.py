"""The two grading machines the host-independence tests compare: this one, and one with a GPU.

On a CPU-only machine the second is simulated: torch as the probes saw it on an H100 when they ran
in the test process, with CUDA available and started, memory already allocated and
reserved, and a GPU generator that works. On a machine with a GPU, "this machine" is a real one.
"""
import contextlib

from utils.simulated_cuda import simulate_cuda, simulate_cuda_rng

MIB = 2**20


@contextlib.contextmanager
def gpu_in_use():
    """One GPU that other code has used: 32 MiB allocated, 64 MiB reserved, its generator seeded."""
    with simulate_cuda(cached_bytes=32 * MIB) as sim, simulate_cuda_rng(devices=1):
        held = sim.tensor(32 * MIB, "another notebook's tensors")
        yield
        del held


HOSTS = {"this_machine": contextlib.nullcontext, "gpu_host": gpu_in_use}
