"""Data-pipeline helpers (notebook 06): a folder of real JPEG files and the Datasets that read it.

Why these live in a module and not in the notebook: DataLoader workers started with ``spawn``
(the default on macOS and Windows) or ``forkserver`` (the default on Linux from Python 3.14)
are fresh interpreters that import the dataset's class, its transforms and ``worker_init_fn``
*by name*. A class or function defined in a notebook cell has no importable name, so only
``fork`` workers (the Linux default up to Python 3.13) can use it; a class in an importable
module such as this one works with every start method.

Besides the datasets, the module holds the notebook's scaffolding: the loops that time a loader,
worker memory and error reports (T078), decoders (T081, T082) and the figures of T083 and T085.
The DataLoader settings themselves (``num_workers``, ``persistent_workers``, ``prefetch_factor``,
``pin_memory``) are written in the notebook, where the learner sees them. Heavy libraries (Pillow,
torchvision, matplotlib) are imported where they are used: the grader imports this module for
every exercise.
"""
from __future__ import annotations

import io
import math
import multiprocessing
import os
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from .bench import is_quick
from .units import format_seconds

try:
    import psutil  # comes with Jupyter; reads the workers' memory
except ImportError:  # pragma: no cover
    psutil = None

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


# ---------------------------------------------------------------- loaders and what they cost (T078)

# DataLoader's warning when it starts more workers than this machine has cores: the demos of
# notebook 06 do so on purpose (the notebook says it in words and silences it by this message).
TOO_MANY_WORKERS = r"This DataLoader will create \d+ worker processes in total"


def one_epoch(loader: DataLoader, threads: int | None = None) -> int:
    """Iterate over one epoch and count the samples: the loop does nothing else, so this times the
    input pipeline alone. ``threads`` sets PyTorch's thread count for the epoch (every DataLoader
    worker runs with one) and restores it afterwards."""
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    seen = 0
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=TOO_MANY_WORKERS, category=UserWarning)
            for batch in loader:
                seen += len(batch[-1] if isinstance(batch, (list, tuple)) else batch)
    finally:
        torch.set_num_threads(before)
    return seen


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def first_batch_seconds(loader: DataLoader) -> str:
    """One timed run: ``iter(loader)`` until the first batch (its workers start, and stop again
    afterwards). A single run: an order of magnitude, not a median. In QUICK mode only ``fork``
    workers are timed: the other start methods take seconds."""
    context = loader.multiprocessing_context
    method = context.get_start_method() if context is not None else multiprocessing.get_start_method()
    if method != "fork" and is_quick():
        return "not timed in QUICK mode"
    start = time.perf_counter()
    next(iter(loader))
    return format_seconds(time.perf_counter() - start)


def worker_pids(loader: DataLoader) -> list[int]:
    """The process ids of a loader's running workers (a persistent loader keeps them between epochs)."""
    iterator = getattr(loader, "_iterator", None)
    return [worker.pid for worker in getattr(iterator, "_workers", [])]


def worker_memory(loaders: dict, batch_bytes: int) -> list[dict]:
    """Rows for a table: the unique (USS) and resident (RSS) memory of this process and of the
    workers of each running loader in ``loaders`` ({num_workers: loader}), read with psutil (the
    median worker's), and the most finished batches of ``batch_bytes`` each loader can hold
    (num_workers x prefetch_factor)."""
    if psutil is None:
        return [{"processes": "psutil is not installed: pip install psutil"}]
    mib = lambda n: f"{n / 2**20:.0f}"  # noqa: E731
    me = psutil.Process().memory_full_info()
    rows = [{"processes": "the kernel", "USS each (MiB)": mib(me.uss), "RSS each (MiB)": mib(me.rss),
             "batches in flight (MiB)": "-"}]
    for workers, loader in loaders.items():
        infos = [psutil.Process(pid).memory_full_info() for pid in worker_pids(loader)]
        if infos:
            rows.append({"processes": f"{len(infos)} worker{'s' * (len(infos) != 1)}",
                         "USS each (MiB)": mib(np.median([i.uss for i in infos])),
                         "RSS each (MiB)": mib(np.median([i.rss for i in infos])),
                         "batches in flight (MiB)": f"{workers * (loader.prefetch_factor or 0)} x {batch_bytes / 2**20:.2g}"})
    return rows


class UnevenReads(Dataset):
    """Samples whose reads usually take ``read_s`` but stall for ``stall_s`` in the first sample of
    every ``every``-th batch (of ``batch_size``) from batch ``first`` on (a network file system, a
    cold cache), simulated with ``time.sleep``: the workers wait without using a core. Sample
    ``i`` is ``tensor(i)``; read it without shuffling, so the stalls fall where they are meant to."""

    def __init__(self, batches: int, batch_size: int, read_s: float, stall_s: float, every: int, first: int):
        self.batches, self.batch_size = batches, batch_size
        self.read_s, self.stall_s, self.every, self.first = read_s, stall_s, every, first

    def __len__(self) -> int:
        return self.batches * self.batch_size

    def __getitem__(self, index: int) -> torch.Tensor:
        batch, position = divmod(index, self.batch_size)
        stalls = position == 0 and batch >= self.first and (batch - self.first) % self.every == 0
        time.sleep(self.stall_s if stalls else self.read_s)
        return torch.tensor(index)


def train_steps(loader: DataLoader, step_s: float) -> int:
    """An epoch in which every batch is followed by a training step of ``step_s`` seconds
    (a sleep, standing in for a GPU that is busy while the CPU waits)."""
    seen = 0
    for batch in loader:
        seen += len(batch)
        time.sleep(step_s)
    return seen


def first_batch_errors(dataset: Dataset, workers: tuple[int, ...] = (2, 0)) -> list[dict]:
    """Rows for a table, one per field of ``first_batch_error``, one column per ``num_workers``."""
    errors = {f"num_workers={n}": first_batch_error(dataset, n) for n in workers}
    fields = list(dict.fromkeys(k for error in errors.values() for k in error))
    return [{"": field, **{column: error.get(field, "") for column, error in errors.items()}} for field in fields]


def first_batch_error(dataset: Dataset, num_workers: int) -> dict:
    """What a failing ``dataset`` raises from a DataLoader's first batch: the exception, the first
    line of its message and how many lines it has, and the innermost frame a debugger (``%debug``)
    would open."""
    try:
        next(iter(DataLoader(dataset, batch_size=4, num_workers=num_workers)))
    except Exception as err:  # noqa: BLE001 (showing the error is the point)
        lines = str(err).strip().splitlines()
        frame = traceback.extract_tb(err.__traceback__)[-1]
        # DataLoader's re-raised exception sits in a reference cycle with its traceback's frames, which
        # hold the loader's iterator: dropping the traceback frees the iterator now, and its workers
        # stop at once. Left to the garbage collector, their shutdown waits 5 s per worker.
        err.__traceback__ = None
        return {"raises": type(err).__name__, "first line": lines[0], "lines": len(lines),
                "innermost frame": f"{frame.name}() in {Path(frame.filename).name}"}
    return {"raises": "nothing"}


def worker_draws(loader: DataLoader) -> list[dict]:
    """The batches of a DataLoader over ``RandomDraws``: who drew what from the dataset's own
    generator and from NumPy's global one (modulo 10**6, to stay readable)."""
    return [{"worker": int(batch["worker"][0]), "indices": batch["index"].tolist(),
             "dataset's own generator (self.rng)": [d % 10**6 for d in batch["draw"].tolist()],
             "global np.random": [d % 10**6 for d in batch["global_draw"].tolist()]} for batch in loader]


def repeated_across_workers(rows: list[dict], column: str) -> bool:
    """Whether workers 0 and 1 drew the same numbers in ``column`` of ``worker_draws``' rows."""
    drawn = {worker: [d for row in rows if row["worker"] == worker for d in row[column]] for worker in (0, 1)}
    return drawn[0] == drawn[1]


# ---------------------------------------------------------------- decoding on the GPU (T081)

def jpeg_bytes(folder: str | os.PathLike, count: int, side: int, seed: int = 1) -> list[bytes]:
    """Write ``count`` synthetic ``side`` x ``side`` JPEG files into ``folder``; their bytes."""
    return [Path(path).read_bytes() for path, _ in write_jpegs(folder, count, size=(side, side), seed=seed)]


def read_from_storage(paths) -> int:
    """Drop the files from the page cache, then read them: from the storage device (where
    ``evict_from_page_cache`` works and the folder is not in RAM)."""
    evict_from_page_cache(paths, flush=False)
    return read_files(paths)


def decode_jpegs(raw: list[bytes], device: torch.device | str = "cpu", mode: str = "RGB") -> list[torch.Tensor]:
    """Decode a list of JPEG files with ``torchvision.io.decode_jpeg`` on ``device`` (a CUDA device
    decodes with nvJPEG). ``mode``: "RGB" or "GRAY". Its deprecation warning is silenced, as in
    ``decode_torchvision``."""
    from torchvision.io import ImageReadMode, decode_jpeg

    encoded = [torch.frombuffer(bytearray(data), dtype=torch.uint8) for data in raw]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=TORCHVISION_IO_DEPRECATED, category=DeprecationWarning)
        return decode_jpeg(encoded, mode=getattr(ImageReadMode, mode), device=device)


# ---------------------------------------------------------------- the same file, decoded several ways (T082)

def decode_pillow_via_ycbcr(data: bytes) -> torch.Tensor:
    """Pillow again, but the decoder returns YCbCr and Pillow converts it to RGB: the same library,
    another colour conversion."""
    return _pillow(data, "RGB", ("YCbCr", "full"))


def _pillow(data: bytes, mode: str, draft: tuple | None = None, resize: bool = False) -> torch.Tensor:
    """Decode with Pillow into ``mode``; ``draft=(mode, "full" or "half")`` asks the decoder itself
    for that mode and size (its DCT scaling), ``resize`` halves the image after a full decode."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        half = (image.width // 2, image.height // 2)
        if draft:
            image.draft(draft[0], half if draft[1] == "half" else image.size)
        image = image.convert(mode)
        if resize:
            image = image.resize(half, Image.Resampling.BILINEAR)
        pixels = torch.from_numpy(np.array(image))
    return pixels[None] if pixels.dim() == 2 else pixels.permute(2, 0, 1)


def difference(a: torch.Tensor, b: torch.Tensor) -> dict:
    """How two uint8 images (or two flat sets of values) differ: largest and mean absolute
    difference per value, the share of pixels with any difference, and the PSNR."""
    d = (a.to(torch.int16) - b.to(torch.int16)).abs()
    mse = d.double().square().mean().item()
    pixel = d.amax(dim=0) if d.dim() == 3 else d
    return {"max |diff|": int(d.max()), "mean |diff|": f"{d.double().mean().item():.3f}",
            "pixels that differ": f"{(pixel > 0).double().mean().item():.1%}",
            "PSNR (dB)": "identical" if mse == 0 else f"{10 * math.log10(255**2 / mse):.1f}"}


def encoded_pixels(count: int, size: tuple[int, int], seed: int = 0) -> list[torch.Tensor]:
    """The pixels ``write_jpegs(..., count, size, seed=seed)`` encoded, before JPEG's loss (3 x H x W)."""
    rng = np.random.default_rng(seed)
    return [torch.from_numpy(synthetic_image(rng, *size)[0]).permute(2, 0, 1) for _ in range(count)]


def decoding_differences(raw: list[bytes], originals: list[torch.Tensor], device: torch.device) -> list[dict]:
    """Rows for a table: the same files decoded two ways, compared over all their pixels. The last
    row, nvJPEG on the GPU, appears on a CUDA device only."""
    pillow = [decode_pillow(data) for data in raw]
    routes = {
        "the encoded pixels vs Pillow (JPEG's loss)": (originals, pillow),
        "Pillow vs torchvision decode_jpeg": (pillow, decode_jpegs(raw)),
        "Pillow: libjpeg's YCbCr->RGB vs its own": (pillow, [decode_pillow_via_ycbcr(d) for d in raw]),
        "gray: torchvision's luma vs Pillow's 'L'": (decode_jpegs(raw, mode="GRAY"), [_pillow(d, "L") for d in raw]),
        "half size: DCT scaling vs a resize": (
            [_pillow(d, "RGB", ("RGB", "half")) for d in raw], [_pillow(d, "RGB", resize=True) for d in raw]),
    }
    if torch.device(device).type == "cuda":
        routes["Pillow vs decode_jpeg on the GPU (nvJPEG)"] = (
            pillow, [image.cpu() for image in decode_jpegs(raw, device=device)])
    return [{"decoded two ways": name, **difference(torch.cat([x.flatten() for x in a]), torch.cat([y.flatten() for y in b]))}
            for name, (a, b) in routes.items()]


# ---------------------------------------------------------------- batching (T084)

def small_cnn(channels: int, device: torch.device, classes: int = 3) -> torch.nn.Module:
    """Two 3x3 convolutions, global pooling and a linear layer, seeded, in eval mode on ``device``."""
    torch.manual_seed(0)
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(3, channels, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(channels, channels, 3, stride=2, padding=1), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, classes)).to(device).eval()


# ---------------------------------------------------------------- figures (T083, T085)

def transform_figure(plain: Dataset, train: Dataset, val: Dataset, mean, std, index: int = 0, crops: int = 4):
    """One image as stored, ``crops`` train views and the validation view (Normalize undone for
    display), as a matplotlib Figure (no pyplot state: show it with ``utils.plots.Shown``)."""
    from matplotlib.figure import Figure

    def pixels(x: torch.Tensor) -> np.ndarray:
        x = x * torch.tensor(std)[:, None, None] + torch.tensor(mean)[:, None, None]
        return x.clamp(0, 1).permute(1, 2, 0).numpy()

    image, label = plain[index]
    views = [(f"the file ({image.shape[2]}x{image.shape[1]})", image.permute(1, 2, 0).numpy())]
    views += [(f"train view {i + 1}", pixels(train[index][0])) for i in range(crops)]
    views += [("validation view", pixels(val[index][0]))]
    fig = Figure(figsize=(2 * len(views), 2.4), layout="constrained")
    for ax, (title, view) in zip(fig.subplots(1, len(views)), views):
        ax.imshow(view)
        ax.set_title(title, fontsize=8)
        ax.axis("off")
    fig.suptitle(f"T083: one image ({SHAPES[int(label)]}), train and validation transforms", fontsize=10)
    return fig


def tsn_figure(hits: torch.Tensor, eval_indices: torch.Tensor, segments: int, draws: int):
    """How often each frame was drawn by a TSN sampler in training (bars; frames never drawn in
    red), its segments (dotted) and its evaluation frames (triangles)."""
    from matplotlib.figure import Figure

    frames = len(hits)
    never = (hits == 0).nonzero().flatten().tolist()
    fig = Figure(figsize=(10, 2.8), layout="constrained")
    ax = fig.subplots()
    ax.bar(range(frames), hits.tolist(), color="#1f77b4", label="training draws")
    for k in range(segments + 1):
        ax.axvline(k * (frames // segments) - 0.5, color="gray", linewidth=0.8, linestyle=":")
    if never:
        ax.axvspan(min(never) - 0.5, max(never) + 0.5, color="#d62728", alpha=0.25, label="never chosen")
    ax.scatter(eval_indices.tolist(), [0] * len(eval_indices), marker="^", color="black", zorder=3,
               label="evaluation frames")
    ax.set(xlabel="frame", ylabel=f"times chosen in {draws} draws", xlim=(-1, frames))
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(1.01, 0.0), frameon=False)
    fig.suptitle(f"T085: the source write-up's TSN sampler, {frames} frames, K={segments}: "
                 f"segments of {frames // segments} frames (dotted)", fontsize=10)
    return fig
