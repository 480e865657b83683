"""Data-pipeline helpers (notebook 06): a folder of real JPEG files and the Datasets that read it.

Why these live in a module and not in the notebook: DataLoader workers started with ``spawn``
(the default on macOS and Windows) or ``forkserver`` (the default on Linux from Python 3.14)
are fresh interpreters that import the dataset's class, its transforms and ``worker_init_fn``
*by name*. A class or function defined in a notebook cell has no importable name, so only
``fork`` workers (the Linux default up to Python 3.13) can use it; a class in an importable
module such as this one works with every start method.
"""
from __future__ import annotations

import io
import os
import warnings
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset, get_worker_info

SHAPES = ("disc", "square", "stripes")  # the label of a synthetic image is the shape drawn on it
TORCHVISION_IO_DEPRECATED = "The image decoding and encoding capabilities of TorchVision are deprecated"


def synthetic_image(rng: np.random.Generator, height: int, width: int) -> tuple[np.ndarray, int]:
    """A photo-like test image (``height`` x ``width`` x 3, uint8) and its label.

    A smooth colour gradient, one shape (the label indexes ``SHAPES``) with soft edges, and mild
    sensor noise: JPEG then compresses it the way it compresses a photo (smooth areas, edges,
    noise), not the way it compresses flat synthetic colours.
    """
    if height < 8 or width < 8:
        raise ValueError(f"images need at least 8x8 pixels, got {height}x{width}")
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    yy, xx = yy / height, xx / width
    image = (rng.uniform(0.2, 0.8, 3) + yy[..., None] * rng.uniform(-0.3, 0.3, 3)
             + xx[..., None] * rng.uniform(-0.3, 0.3, 3))
    label = int(rng.integers(len(SHAPES)))
    cy, cx = rng.uniform(0.3, 0.7, 2)
    radius = rng.uniform(0.15, 0.3)
    if label == 0:
        distance = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2) - radius
    elif label == 1:
        distance = np.maximum(np.abs(yy - cy), np.abs(xx - cx)) - radius
    else:
        distance = np.sin(2 * np.pi * (xx * np.cos(radius * 9) + yy * np.sin(radius * 9)) * 6) * 0.05
    weight = np.clip(0.5 - distance * max(height, width) / 3, 0, 1)[..., None]  # soft edge, ~3 px wide
    image = image * (1 - weight) + rng.uniform(0, 1, 3) * weight
    image = image + rng.normal(0, 0.03, image.shape)
    return (np.clip(image, 0, 1) * 255 + 0.5).astype(np.uint8), label


def write_jpegs(folder: str | os.PathLike, count: int, size: tuple[int, int] = (128, 128), quality: int = 90,
                seed: int = 0) -> list[tuple[str, int]]:
    """Write ``count`` synthetic JPEG files (``size`` = height, width) with Pillow into ``folder``.

    Returns the ``(path, label)`` pairs, the usual input of an image-folder dataset. The same
    seed writes the same files.
    """
    from PIL import Image

    if count < 1:
        raise ValueError(f"count must be positive, got {count}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    items = []
    for index in range(count):
        pixels, label = synthetic_image(rng, *size)
        path = folder / f"{index:05d}_{SHAPES[label]}.jpg"
        Image.fromarray(pixels).save(path, format="JPEG", quality=quality)
        items.append((str(path), label))
    return items


def decode_pillow(data: bytes) -> torch.Tensor:
    """JPEG bytes -> a 3 x H x W uint8 RGB tensor, decoded by Pillow."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        pixels = np.array(image.convert("RGB"))  # np.array, not np.asarray: a writable copy
    return torch.from_numpy(pixels).permute(2, 0, 1)


def decode_torchvision(data: bytes) -> torch.Tensor:
    """JPEG bytes -> a 3 x H x W uint8 RGB tensor, decoded by ``torchvision.io.decode_jpeg`` (CPU).

    torchvision 0.29 deprecates its image decoders in favour of TorchCodec's (same libjpeg-turbo
    underneath); the deprecation warning is silenced here, where it cannot be acted on.
    """
    from torchvision.io import ImageReadMode, decode_jpeg

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=TORCHVISION_IO_DEPRECATED, category=DeprecationWarning)
        return decode_jpeg(torch.frombuffer(bytearray(data), dtype=torch.uint8), mode=ImageReadMode.RGB)


DECODERS = {"pillow": decode_pillow, "torchvision": decode_torchvision}


class JpegFiles(Dataset):
    """``(image, label)`` pairs from JPEG files: read the bytes, decode, then apply ``transform``.

    ``items`` are ``(path, label)`` pairs (as ``write_jpegs`` returns them); ``decoder`` is
    ``"pillow"`` or ``"torchvision"``; ``transform`` takes and returns the image (a 3 x H x W
    uint8 tensor), e.g. a ``torchvision.transforms.v2.Compose``. Paths are kept in one NumPy
    array rather than a list of Python strings: forked workers then share them instead of
    slowly copying every page they touch (reference counts write to every Python object read).
    """

    def __init__(self, items, transform=None, decoder: str = "pillow"):
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {sorted(DECODERS)}, got {decoder!r}")
        items = list(items)
        self.paths = np.array([str(path) for path, _ in items])
        self.labels = torch.tensor([int(label) for _, label in items], dtype=torch.long)
        self.transform = transform
        self.decoder = decoder

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int):
        image = DECODERS[self.decoder](Path(str(self.paths[index])).read_bytes())
        if self.transform is not None:
            image = self.transform(image)
        return image, self.labels[index]


class RandomDraws(Dataset):
    """A dataset whose samples expose the randomness a worker used.

    Sample ``i`` is a dict: ``index`` (i), ``draw`` (one number from the dataset's own NumPy
    generator ``self.rng``, standing in for a random augmentation), ``global_draw`` (one number
    from NumPy's global generator, ``np.random``) and ``worker`` (the id of the DataLoader worker
    that produced it, -1 in the main process). Keeping a generator in the dataset is what NumPy
    recommends over the global functions; but every worker receives a *copy* of it, so unless
    each worker re-seeds its copy, all workers draw the same numbers. DataLoader seeds the global
    generators of each worker itself.
    """

    def __init__(self, length: int, seed: int = 0):
        if length < 1:
            raise ValueError(f"length must be positive, got {length}")
        self.length = length
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> dict:
        if not 0 <= index < self.length:
            raise IndexError(index)
        info = get_worker_info()
        return {"index": int(index), "draw": int(self.rng.integers(2**62)),
                "global_draw": int(np.random.randint(0, 2**62, dtype=np.int64)),
                "worker": -1 if info is None else info.id}


def read_files(paths) -> int:
    """Read every file completely (from the page cache or from the disk); returns the bytes read."""
    return sum(len(Path(path).read_bytes()) for path in paths)


def evict_from_page_cache(paths, flush: bool = True) -> bool:
    """Ask the operating system to drop these files from its page cache, so that the next read
    comes from the storage device.

    Uses ``posix_fadvise(POSIX_FADV_DONTNEED)`` (Linux; no privileges needed for your own files).
    Only pages already written to the disk can be dropped: ``flush=True`` first syncs each file,
    which can cost milliseconds per file; once the files are on disk, later calls can pass
    ``flush=False``. Returns False where the call does not exist (macOS, Windows). The OS may
    still keep the data in memory: on a RAM file system (tmpfs) there is no disk to read from.
    """
    if not hasattr(os, "posix_fadvise"):
        return False
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            if flush:
                os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return True
