# Breaks clause 2 (**kwargs reach the DataLoader unchanged, over any default of yours): it keeps its
# workers alive with persistent_workers=True of its own, so a caller who passes persistent_workers
# gets "multiple values for keyword argument" (the visible tests never pass it).
import numpy as np
import torch
from torch.utils.data import DataLoader, get_worker_info


def _reseed(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)


def make_loader(dataset, batch_size, num_workers, seed, **kwargs):
    dataset.rng = np.random.default_rng(seed)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                      generator=torch.Generator().manual_seed(seed), worker_init_fn=_reseed,
                      persistent_workers=num_workers > 0, **kwargs)
