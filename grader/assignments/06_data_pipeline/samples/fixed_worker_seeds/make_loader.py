import numpy as np
import torch
from torch.utils.data import DataLoader, get_worker_info

_SEED = {}


def _reseed(worker_id):
    # each worker's stream from (seed, worker id): it restarts at every epoch unless the workers persist
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng([info.dataset.__dict__["_loader_seed"], worker_id])


def make_loader(dataset, batch_size, num_workers, seed, **kwargs):
    """Wrong (clause 6 when the caller passes persistent_workers=False): the workers' streams restart every
    epoch; only this function's own default persistent_workers=True hides it."""
    dataset._loader_seed = seed
    dataset.rng = np.random.default_rng(seed)
    options = dict(batch_size=batch_size, shuffle=True, num_workers=num_workers,
                   generator=torch.Generator().manual_seed(seed), worker_init_fn=_reseed,
                   persistent_workers=num_workers > 0)
    options.update(kwargs)
    return DataLoader(dataset, **options)
