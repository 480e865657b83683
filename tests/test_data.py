"""utils.data: the JPEG files, the datasets that read them, and the page-cache helpers (notebook 06)."""
import multiprocessing

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from utils.data import (SHAPES, JpegFiles, RandomDraws, decode_pillow, decode_torchvision, evict_from_page_cache,
                        first_batch_errors, first_batch_seconds, read_files, synthetic_image, worker_draws,
                        write_jpegs)


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jpegs")
    return write_jpegs(folder, 6, size=(48, 40), seed=3)


def test_synthetic_images_are_deterministic_photo_like_and_labelled():
    a, label_a = synthetic_image(np.random.default_rng(1), 32, 24)
    b, label_b = synthetic_image(np.random.default_rng(1), 32, 24)
    assert a.shape == (32, 24, 3) and a.dtype == np.uint8
    assert np.array_equal(a, b) and label_a == label_b and 0 <= label_a < len(SHAPES)
    assert a.std() > 5, "a flat image would compress unlike a photo"
    with pytest.raises(ValueError):
        synthetic_image(np.random.default_rng(0), 4, 32)


def test_write_jpegs_writes_real_jpeg_files_reproducibly(jpegs, tmp_path):
    assert len(jpegs) == 6
    for path, label in jpegs:
        data = open(path, "rb").read()
        assert data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9", "JPEG start and end markers"
        assert path.endswith(f"_{SHAPES[label]}.jpg")
    again = write_jpegs(tmp_path, 6, size=(48, 40), seed=3)
    assert [open(p, "rb").read() for p, _ in again] == [open(p, "rb").read() for p, _ in jpegs]
    with pytest.raises(ValueError):
        write_jpegs(tmp_path, 0)


def test_decoders_give_uint8_chw_images_that_agree_within_a_tolerance(jpegs):
    data = open(jpegs[0][0], "rb").read()
    pillow, tv = decode_pillow(data), decode_torchvision(data)
    for image in (pillow, tv):
        assert image.shape == (3, 48, 40) and image.dtype == torch.uint8
    assert (pillow.int() - tv.int()).abs().max() <= 2  # never assume bit-exact equality (T082)


def test_jpeg_files_dataset_reads_decodes_and_transforms(jpegs):
    dataset = JpegFiles(jpegs, transform=lambda image: image.float() / 255)
    assert len(dataset) == 6
    image, label = dataset[2]
    assert image.dtype == torch.float32 and image.shape == (3, 48, 40) and 0 <= image.min() <= image.max() <= 1
    assert label.dtype == torch.long and int(label) == jpegs[2][1]
    assert torch.equal(JpegFiles(jpegs)[2][0], decode_pillow(open(jpegs[2][0], "rb").read()))
    assert JpegFiles(jpegs, decoder="torchvision")[2][0].shape == (3, 48, 40)
    with pytest.raises(ValueError):
        JpegFiles(jpegs, decoder="opencv")


def test_jpeg_files_work_with_spawned_workers(jpegs):
    """The reason the class lives in a module: spawn workers import it by name."""
    loader = DataLoader(JpegFiles(jpegs), batch_size=3, num_workers=1, multiprocessing_context="spawn")
    batches = list(loader)
    assert [tuple(images.shape) for images, _ in batches] == [(3, 3, 48, 40)] * 2


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs the fork start method")
def test_random_draws_repeat_in_every_worker_unless_reseeded():
    dataset = RandomDraws(8, seed=0)
    sample = dataset[5]
    assert sample["index"] == 5 and sample["worker"] == -1 and isinstance(sample["draw"], int)
    with pytest.raises(IndexError):
        dataset[8]
    own, glob = {}, {}
    for batch in DataLoader(RandomDraws(8, seed=0), batch_size=2, num_workers=2, multiprocessing_context="fork"):
        worker = int(batch["worker"][0])
        own.setdefault(worker, []).extend(batch["draw"].tolist())
        glob.setdefault(worker, []).extend(batch["global_draw"].tolist())
    assert own[0] == own[1], "every worker copies the dataset's generator in the same state"
    assert glob[0] != glob[1], "DataLoader seeds each worker's global NumPy generator"


def test_read_files_and_evict_from_page_cache(jpegs):
    paths = [path for path, _ in jpegs]
    total = read_files(paths)
    assert total == sum(len(open(p, "rb").read()) for p in paths)
    evicted = evict_from_page_cache(paths)
    assert isinstance(evicted, bool)
    assert evict_from_page_cache(paths, flush=False) == evicted
    assert read_files(paths) == total, "eviction drops cached pages, never data"


def test_first_batch_errors_has_one_column_per_num_workers(jpegs):
    from torchvision.transforms import v2

    rows = first_batch_errors(JpegFiles(jpegs, transform=v2.RandomCrop(400)), workers=(0,))
    fields = {row[""]: row["num_workers=0"] for row in rows}
    assert fields["raises"] == "ValueError" and fields["lines"] == 1
    assert "crop size" in fields["first line"] and fields["innermost frame"].endswith(".py")


def test_first_batch_seconds_times_a_loader_and_skips_slow_starts_in_quick_mode(jpegs, monkeypatch):
    from utils import bench

    assert first_batch_seconds(DataLoader(JpegFiles(jpegs), batch_size=2)).split()[-1] in ("s", "ms", "µs")
    monkeypatch.setitem(bench._settings, "quick", True)
    spawned = DataLoader(JpegFiles(jpegs), batch_size=2, num_workers=1, multiprocessing_context="spawn")
    assert first_batch_seconds(spawned) == "not timed in QUICK mode"


def test_worker_draws_tabulate_a_loaders_batches():
    rows = worker_draws(DataLoader(RandomDraws(6, seed=0), batch_size=3))
    assert [row["indices"] for row in rows] == [[0, 1, 2], [3, 4, 5]] and {row["worker"] for row in rows} == {-1}
    assert all(len(row["dataset's own generator (self.rng)"]) == 3 for row in rows)
