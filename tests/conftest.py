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
