import numpy as np
import torch
from torch.utils.data import DataLoader, get_worker_info


def _reseed(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)


_ALLOWED = {"collate_fn", "persistent_workers", "prefetch_factor"}


def make_loader(dataset, batch_size, num_workers, seed, **kwargs):
    """Wrong (clause 2): only some keyword arguments get through, and the start method is always fork,
    over the caller's multiprocessing_context (and pin_memory, timeout, ... are silently dropped)."""
    dataset.rng = np.random.default_rng(seed)
    options = {k: v for k, v in kwargs.items() if k in _ALLOWED}
    if num_workers > 0:
        options["multiprocessing_context"] = "fork"
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                      generator=torch.Generator().manual_seed(seed), worker_init_fn=_reseed, **options)
