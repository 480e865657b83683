import random
import warnings

import pytest
import torch

from utils import env_report, pick_device, seed_everything, setup


def test_auto_picks_an_available_device():
    dev = pick_device("auto")
    expected = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
    assert dev.type == expected
    torch.ones(2, device=dev)  # the chosen device really works


def test_explicit_cpu_and_device_objects():
    assert pick_device("cpu") == torch.device("cpu")
    assert pick_device(" CPU ") == torch.device("cpu")
    assert pick_device(torch.device("cpu")) == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error raised when CUDA is missing")
def test_missing_cuda_is_an_error_not_a_silent_fallback():
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        pick_device("cuda")


@pytest.mark.parametrize("bad", ["gpu", "tpu", "", "cuda0"])
def test_unknown_device_names_are_rejected(bad):
    with pytest.raises(ValueError, match="unknown device"):
        pick_device(bad)


def test_non_string_preference_is_rejected():
    with pytest.raises(TypeError):
        pick_device(0)


def test_env_report_names_versions_and_hardware():
    report = env_report()
    assert report["torch"] == torch.__version__
    assert report["CUDA available"] == str(torch.cuda.is_available())
    for key in ("python", "torchvision", "cuDNN", "CUDA_VISIBLE_DEVICES", "cpu threads"):
        assert report[key]


def test_seed_everything_makes_runs_repeatable():
    seed_everything(123)
    first = (random.random(), torch.rand(3))
    seed_everything(123)
    second = (random.random(), torch.rand(3))
    assert first[0] == second[0]
    assert torch.equal(first[1], second[1])


def test_seed_everything_deterministic_switches_autotuner_off():
    try:
        seed_everything(0, deterministic=True)
        assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
        assert torch.are_deterministic_algorithms_enabled()
    finally:
        seed_everything(0)
    assert not torch.are_deterministic_algorithms_enabled()


def test_seed_must_be_an_int():
    with pytest.raises(TypeError):
        seed_everything("1")


def test_setup_validates_quick(capsys):
    with pytest.raises(TypeError, match="QUICK"):
        setup("cpu", quick="yes")
    assert setup("cpu", quick=True) == torch.device("cpu")
    assert "QUICK mode" in capsys.readouterr().out


def test_auto_says_so_loudly_when_a_gpu_is_present_but_cuda_cannot_start(monkeypatch):
    from utils import device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(device, "nvidia_gpu_present", lambda: True)
    with pytest.warns(device.CudaUnusableWarning, match="falls back to the CPU.*CUDA 13.0"):
        assert pick_device("auto").type in ("cpu", "mps")


def test_auto_is_quiet_on_a_machine_without_an_nvidia_gpu(monkeypatch, recwarn):
    from utils import device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(device, "nvidia_gpu_present", lambda: False)
    pick_device("auto")
    assert not [w for w in recwarn if issubclass(w.category, device.CudaUnusableWarning)]


def test_deterministic_seeding_configures_cublas(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    try:
        seed_everything(0, deterministic=True)
        import os
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] in (":4096:8", ":16:8")
    finally:
        seed_everything(0)


def test_setup_keeps_known_library_notices_off_stderr_and_lets_others_through():
    from utils.session import QUIET, quiet_library_notices

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_library_notices()
        for message in QUIET:
            warnings.warn(f"{message}. More text from the library.", UserWarning)
        warnings.warn("a notice the lesson did not expect", UserWarning)
    assert [str(w.message) for w in caught] == ["a notice the lesson did not expect"]
