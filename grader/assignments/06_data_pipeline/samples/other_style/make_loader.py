import numpy as np
import torch
from torch.utils import data


def _give_worker_its_own_rng(worker_id):
    worker = data.get_worker_info()
    # torch.initial_seed() in a worker is DataLoader's seed for it: base seed (from the generator) + worker id
    worker.dataset.rng = np.random.default_rng([torch.initial_seed(), worker.id])


def make_loader(dataset, batch_size, num_workers, seed, **kwargs):
    dataset.rng = np.random.default_rng(np.random.SeedSequence(seed))   # what num_workers=0 draws from
    options = dict(batch_size=batch_size, shuffle=True, drop_last=False, num_workers=num_workers,
                   generator=torch.Generator().manual_seed(seed), worker_init_fn=_give_worker_its_own_rng)
    if num_workers > 0:
        options["persistent_workers"] = True          # the workers' generators simply continue next epoch
    options.update(kwargs)
    return data.DataLoader(dataset, **options)
