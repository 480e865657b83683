# Correct, another style: an explicit RandomSampler with its own generator, and a worker_init_fn that
# seeds each worker's generator from torch's seed for that worker (DataLoader sets it to base seed +
# worker id, the base seed drawn from the loader's generator every epoch). kwargs are merged last.
import numpy as np
import torch
import torch.utils.data as tud


def _own_stream(_):
    info = tud.get_worker_info()
    info.dataset.rng = np.random.Generator(np.random.PCG64(torch.initial_seed()))


def make_loader(dataset, batch_size, num_workers, seed, **kwargs):
    order = torch.Generator()
    order.manual_seed(seed)
    dataset.rng = np.random.Generator(np.random.PCG64([seed, 2024]))
    options = {"sampler": tud.RandomSampler(dataset, generator=order), "batch_size": batch_size,
               "num_workers": num_workers, "worker_init_fn": _own_stream, "generator": order}
    options.update(kwargs)
    return tud.DataLoader(dataset, **options)
