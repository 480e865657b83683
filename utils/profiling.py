"""Notebook 09 (profiling): the input pipeline of its training step, and where traces go.

The augmentation code lives here, not in the notebook, because DataLoader worker processes must
import it: on macOS and Windows (and on Linux from Python 3.14) workers do not fork the notebook's
process, so they cannot see functions defined in a notebook cell. The notebook shows its source.

Two versions of one augmentation (random brightness and contrast, pad with zeros, random 32x32
crop, random horizontal flip, normalize: a common CIFAR recipe); given the same random parameters
they return the same tensor:

- ``augment_one``: one image at a time, as a per-sample ``Dataset.__getitem__`` does it;
- ``augment_batch``: the whole batch in a few tensor operations, on whatever device it is on.
"""
from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import record_function
from torch.utils.data import Dataset

SIZE = 32            # output images are SIZE x SIZE
PAD = 4              # zero padding before the random crop
JITTER = 0.4        # brightness and contrast factors are drawn from [1 - JITTER, 1 + JITTER]
GRAY = (0.299, 0.587, 0.114)   # RGB weights of the grayscale mean that contrast blends towards
MEAN = (0.49, 0.48, 0.45)
STD = (0.25, 0.24, 0.26)
SAMPLE_LABEL = "data: augment one sample"


def trace_dir() -> Path:
    """The repo's ignored ``build/traces`` folder (created if missing): where the notebook writes traces."""
    path = Path(__file__).resolve().parents[1] / "build" / "traces"
    path.mkdir(parents=True, exist_ok=True)
    return path


def random_params(batch: int, device: torch.device | str = "cpu",
                  generator: torch.Generator | None = None) -> tuple[torch.Tensor, ...]:
    """Per image: crop offsets (top, left) in [0, 2*PAD], a flip flag, brightness and contrast factors.

    Drawn directly on ``device`` (no copies), or on the CPU from ``generator`` when one is given."""
    where = {"generator": generator} if generator is not None else {"device": device}
    tops = torch.randint(0, 2 * PAD + 1, (batch,), **where)
    lefts = torch.randint(0, 2 * PAD + 1, (batch,), **where)
    flips = torch.rand(batch, **where) < 0.5
    brightness = 1 - JITTER + 2 * JITTER * torch.rand(batch, **where)
    contrast = 1 - JITTER + 2 * JITTER * torch.rand(batch, **where)
    return tuple(t.to(device) for t in (tops, lefts, flips, brightness, contrast))


def augment_one(image: torch.Tensor, top: int, left: int, flip: bool, brightness: float,
                contrast: float) -> torch.Tensor:
    """One uint8 HxWx3 image -> a normalized 3xSIZExSIZE float tensor (jittered, cropped at top/left, maybe flipped)."""
    x = image.permute(2, 0, 1).float().div(255)                          # HWC uint8 -> CHW float in [0, 1]
    x = (x * brightness).clamp(0, 1)                                    # brightness
    gray = (x * torch.tensor(GRAY).view(3, 1, 1)).sum(0).mean()
    x = (contrast * x + (1 - contrast) * gray).clamp(0, 1)             # contrast: blend with the gray mean
    x = F.pad(x, (PAD, PAD, PAD, PAD))                                  # zeros around the image
    x = x[:, top:top + SIZE, left:left + SIZE]                          # random crop
    if flip:
        x = x.flip(2)                                                   # horizontal flip
    mean = torch.tensor(MEAN).view(3, 1, 1)
    std = torch.tensor(STD).view(3, 1, 1)
    return (x - mean) / std


def augment_batch(images: torch.Tensor, tops: torch.Tensor, lefts: torch.Tensor, flips: torch.Tensor,
                  brightness: torch.Tensor, contrast: torch.Tensor) -> torch.Tensor:
    """A uint8 Bx HxWx3 batch -> normalized Bx3xSIZExSIZE floats, with a few whole-batch operations.

    Per-image factors broadcast over B x 1 x 1 x 1; each image gets its own crop and flip through
    one gather: output pixel (b, c, i, j) reads padded pixel (b, c, tops[b] + i, lefts[b] + j),
    with j reversed for flipped images.
    """
    device = images.device
    x = images.permute(0, 3, 1, 2).float().div_(255)
    brightness = brightness.to(device).view(-1, 1, 1, 1)
    contrast = contrast.to(device).view(-1, 1, 1, 1)
    x = (x * brightness).clamp_(0, 1)
    gray = (x * torch.tensor(GRAY, device=device).view(1, 3, 1, 1)).sum(1).mean((1, 2)).view(-1, 1, 1, 1)
    x = (contrast * x + (1 - contrast) * gray).clamp_(0, 1)
    x = F.pad(x, (PAD, PAD, PAD, PAD))
    steps = torch.arange(SIZE, device=device)
    rows = tops.to(device)[:, None] + steps                             # B x SIZE
    cols = lefts.to(device)[:, None] + steps
    cols = torch.where(flips.to(device)[:, None], cols.flip(1), cols)   # a flipped crop reads its columns backwards
    batch = torch.arange(x.shape[0], device=device)
    channels = torch.arange(x.shape[1], device=device)
    x = x[batch[:, None, None, None], channels[None, :, None, None], rows[:, None, :, None], cols[:, None, None, :]]
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
    return (x - mean) / std


class PerSampleImages(Dataset):
    """uint8 images (N x H x W x 3) and labels; ``__getitem__`` augments ONE image, as many
    real pipelines do (color jitter, crop, flip, normalize per sample), then DataLoader's default
    collate stacks the samples into a batch."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor):
        if images.dtype != torch.uint8 or images.dim() != 4 or images.shape[-1] != 3:
            raise ValueError(f"expected uint8 images of shape N x H x W x 3, got {images.dtype} {tuple(images.shape)}")
        self.images, self.labels = images, labels

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int):
        with record_function(SAMPLE_LABEL):                             # visible in a profile of the main process
            top, left = torch.randint(0, 2 * PAD + 1, (2,)).tolist()
            flip = bool(torch.rand(()) < 0.5)
            brightness, contrast = (1 - JITTER + 2 * JITTER * torch.rand(2)).tolist()
            return augment_one(self.images[index], top, left, flip, brightness, contrast), self.labels[index]
