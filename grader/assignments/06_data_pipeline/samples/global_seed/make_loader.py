# Breaks clause 4 (reproducible from `seed` alone): it seeds torch's global generator and lets DataLoader
# draw the order and the workers' base seed from it. Two loaders made back to back agree (the visible
# tests), but code that draws from torch's global generator between epochs changes the next epoch, and
# the caller's global random state is reset by every call.
import numpy as np
import torch
from torch.utils.data import DataLoader, get_worker_info


def _reseed(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)


def make_loader(dataset, batch_size, num_workers, seed, **kwargs):
    torch.manual_seed(seed)
    dataset.rng = np.random.default_rng(seed)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                      worker_init_fn=_reseed, **kwargs)
