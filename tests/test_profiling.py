"""utils.profiling: notebook 09's input pipeline (per-sample and batched) and its trace folder."""
import pickle

import pytest
import torch

from utils import plots, profiling


def _images(n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, 32, 32, 3), dtype=torch.uint8, generator=g)


def test_batched_augmentation_matches_per_sample():
    images = _images(12)
    params = profiling.random_params(12, generator=torch.Generator().manual_seed(1))
    one_by_one = torch.stack([profiling.augment_one(img, *p) for img, p in zip(images, zip(*(t.tolist() for t in params)))])
    torch.testing.assert_close(profiling.augment_batch(images, *params), one_by_one)
    assert one_by_one.shape == (12, 3, profiling.SIZE, profiling.SIZE) and one_by_one.dtype == torch.float32


def test_crop_and_flip_are_what_they_say():
    image = _images(1)[0]
    centre = (profiling.PAD, profiling.PAD)
    plain = profiling.augment_one(image, *centre, False, 1.0, 1.0)   # centre crop, no jitter: the image itself
    mean = torch.tensor(profiling.MEAN).view(3, 1, 1)
    std = torch.tensor(profiling.STD).view(3, 1, 1)
    torch.testing.assert_close(plain * std + mean, image.permute(2, 0, 1).float() / 255)
    torch.testing.assert_close(profiling.augment_one(image, *centre, True, 1.0, 1.0), plain.flip(2))
    shifted = profiling.augment_one(image, 0, 0, False, 1.0, 1.0) * std + mean     # top-left crop: zero padding shows
    assert torch.all(shifted[:, :profiling.PAD, :] == 0) and torch.all(shifted[:, :, :profiling.PAD] == 0)
    darker = profiling.augment_one(image, *centre, False, 0.5, 1.0) * std + mean
    torch.testing.assert_close(darker, image.permute(2, 0, 1).float() / 255 * 0.5)


def test_random_params_stay_in_range():
    tops, lefts, flips, brightness, contrast = profiling.random_params(500, generator=torch.Generator().manual_seed(2))
    for offsets in (tops, lefts):
        assert offsets.min() >= 0 and offsets.max() <= 2 * profiling.PAD
    assert flips.dtype == torch.bool and 0 < flips.sum() < 500
    for factors in (brightness, contrast):
        assert factors.min() >= 1 - profiling.JITTER and factors.max() <= 1 + profiling.JITTER


def test_dataset_items_and_pickling_for_worker_processes():
    images, labels = _images(4), torch.arange(4)
    dataset = profiling.PerSampleImages(images, labels)
    x, y = dataset[2]
    assert len(dataset) == 4 and x.shape == (3, 32, 32) and y == 2
    clone = pickle.loads(pickle.dumps(dataset))       # what "spawn" workers receive
    assert torch.equal(clone.images, images)
    with pytest.raises(ValueError):
        profiling.PerSampleImages(images.float(), labels)


def test_trace_dir_is_the_ignored_build_folder():
    path = profiling.trace_dir()
    assert path.is_dir() and path.parts[-2:] == ("build", "traces")
    assert path.parent.parent == profiling.Path(profiling.__file__).resolve().parents[1]


def test_phase_figure_draws_one_bar_per_phase_and_column():
    import matplotlib.pyplot as plt

    fig = plots.phase_figure({"before": {"a": 2.0, "b": 1.0}, "after": {"a": 0.5, "c": 1.5}}, "t")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert len(ax.patches) == 6
    plt.close(fig)
