"""Measurement records: one JSON object per line, appended to ``build/measurements.jsonl``.

The file is the hand-off between the notebooks and the report: every measured comparison
appends one record per variant. ``device`` is the comparison's device: a GPU when any of its
variants ran on one. ``variant_device`` is where each variant ran (``bench.compare`` writes it;
older records lack it, and then it is ``device``). ``COURSE_RECORDS`` overrides the path; set it
to an empty string to switch recording off (the grader does, so students cannot write there).
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .paths import BUILD

DEFAULT_PATH = BUILD / "measurements.jsonl"


@dataclass
class Record:
    comparison: str             # id shared by the rows of one compare() call
    tip: str                    # curriculum ID, e.g. "T044"
    title: str                  # what was compared, in words
    variant: str                # label of this row
    role: str                   # "baseline" or "variant"
    device: str                 # "cpu", "cuda:0", ...
    device_name: str
    sizes: dict = field(default_factory=dict)
    median_s: float | None = None
    iqr_s: float | None = None
    runs: int = 0
    speedup: float | None = None          # baseline median / this median
    peak_bytes: int | None = None
    memory_method: str | None = None
    extra: dict = field(default_factory=dict)
    notebook: str = ""
    torch: str = ""
    quick: bool = False
    round_medians: list = field(default_factory=list)  # median of each interleaved round
    device_s: float | None = None         # GPU kernel time per call (CUDA)
    q1_s: float | None = None             # 25th / 75th percentile of the timed runs
    q3_s: float | None = None
    about_overhead: bool = False          # the tip is about host overhead (see utils.verdict)
    host: bool = False                    # a host-side comparison, on the CPU on every machine
    sizes_spec: dict | None = None        # the sizes the notebook picks on each device (bench.sizes)
    verdict: str = ""                     # utils.verdict's kind for this row
    why: str = ""                         # the key of the comparison's explanations (utils/why/), "" = its tip
    headline_variant: str = ""            # the variant its headline is about, "" = the first after the baseline
    facts: dict = field(default_factory=dict)  # further figures its explanations quote, as text
    variant_device: str = ""              # where this variant ran ("cpu" beside GPU variants); "" = ``device``
    variant_device_name: str = ""         # that device in words; "" = ``device_name``

    @property
    def runs_on(self) -> str:
        """The device this variant ran on: its own, or (records from before per-variant devices,
        and comparisons made by hand) the comparison's."""
        return self.variant_device or self.device


def records_path() -> Path | None:
    """Where records go now, or None when recording is switched off."""
    value = os.environ.get("COURSE_RECORDS")
    if value is None:
        return DEFAULT_PATH
    return Path(value) if value.strip() else None


def append(records: list[Record], path: Path | None = None) -> Path | None:
    """Append records as JSON lines; returns the file written, or None if recording is off."""
    path = path if path is not None else records_path()
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(asdict(record), sort_keys=True) + "\n")
    return path


def load(path: Path | None = None) -> list[Record]:
    """Read records back. A malformed line raises ValueError naming the file and line."""
    path = Path(path) if path is not None else records_path()
    if path is None or not path.exists():
        return []
    known = set(Record.__dataclass_fields__)
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            records.append(Record(**{k: v for k, v in data.items() if k in known}))
        except (json.JSONDecodeError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: not a measurement record ({exc})") from exc
    return records
