"""utils.speed_knobs: switches are put back, shapes never repeat and keep the work constant."""
import itertools

import pytest
import torch

from utils import speed_knobs


def test_backend_flags_set_and_restore_even_after_an_error():
    before = speed_knobs.flags()
    with speed_knobs.backend_flags(cudnn_benchmark=not before["torch.backends.cudnn.benchmark"],
                                   cudnn_conv_precision="ieee", matmul_precision="tf32"):
        assert torch.backends.cudnn.benchmark is (not before["torch.backends.cudnn.benchmark"])
        assert torch.backends.cudnn.conv.fp32_precision == "ieee"
        assert torch.backends.cuda.matmul.fp32_precision == "tf32"
    assert speed_knobs.flags() == before
    with pytest.raises(ZeroDivisionError), speed_knobs.backend_flags(matmul_precision="tf32"):
        1 / 0
    assert speed_knobs.flags() == before


def test_backend_flags_leave_unnamed_switches_alone():
    before = speed_knobs.flags()
    with speed_knobs.backend_flags(cudnn_benchmark=True):
        now = speed_knobs.flags()
        assert now["torch.backends.cudnn.conv.fp32_precision"] == before["torch.backends.cudnn.conv.fp32_precision"]
        assert now["torch.backends.cuda.matmul.fp32_precision"] == before["torch.backends.cuda.matmul.fp32_precision"]
    assert speed_knobs.flags() == before


def test_fresh_shapes_never_repeat_and_keep_the_pixel_count():
    pixels = 32 * 64 * 64
    shapes = list(itertools.islice(speed_knobs.fresh_shapes(pixels), 3000))   # more than one pass over the pairs
    assert len(set(shapes)) == len(shapes)
    first_pass = shapes[:500]
    assert all(abs(n * h * w - pixels) <= 0.05 * pixels for n, h, w in first_pass)


def test_cpu_bf16_hardware_is_words():
    text = speed_knobs.cpu_bf16_hardware()
    assert isinstance(text, str) and "bfloat16" in text
