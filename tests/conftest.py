import os

import pytest

# Measurements made by the tests must not land in the course's build/measurements.jsonl.
os.environ["COURSE_RECORDS"] = ""


@pytest.fixture
def records_file(tmp_path, monkeypatch):
    path = tmp_path / "measurements.jsonl"
    monkeypatch.setenv("COURSE_RECORDS", str(path))
    return path


@pytest.fixture
def quick_bench():
    from utils import bench

    bench.configure(True)
    yield bench
    bench.configure(False)


def pytest_collection_modifyitems(config, items):
    """On the GPU runner (COURSE_REQUIRE_CUDA=1) a CUDA test must run: without CUDA, fail instead of skipping."""
    if os.environ.get("COURSE_REQUIRE_CUDA") == "1":
        import torch

        if not torch.cuda.is_available():
            raise pytest.UsageError("COURSE_REQUIRE_CUDA=1 but torch.cuda.is_available() is False: no usable GPU here")
