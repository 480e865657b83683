"""Measurement records: one JSON object per line, appended to ``build/measurements.jsonl``.

The file is the hand-off between the notebooks and the report: every measured comparison
appends one record per variant. ``device`` is the comparison's device: a GPU when any of its
variants ran on one. ``variant_device`` is where each variant ran (``bench.compare`` writes it;
older records lack it, and then it is ``device``). ``COURSE_RECORDS`` overrides the path; set it
to an empty string to switch recording off (the grader does, so students cannot write there).

A card that ``bench`` returns also carries its records in the notebook, as the output's ``MIME``
data (``bundle``), so a submitted ``.ipynb`` holds them too. Records read back from anywhere go
through ``from_json``: the schema below, checked field by field (``Invalid`` says why not).
"""
from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import MISSING, asdict, dataclass, field
from pathlib import Path

from .paths import BUILD

DEFAULT_PATH = BUILD / "measurements.jsonl"
MIME = "application/vnd.pytorch-course.records+json"  # Jupyter keeps it; no front end renders it
ROLES = ("baseline", "variant")


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
    device_merged: bool = False           # device_s counts overlapping kernels once (older records summed them)
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
    metric: str = ""                      # what the tip is about: "" = time, "memory", or an ``extra`` column

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


def bundle(records: list[Record]) -> dict:
    """A display output's data for these records (``_repr_mimebundle_``): each as its JSONL line holds it."""
    return {MIME: {"version": 1, "records": [json.loads(json.dumps(asdict(r), sort_keys=True)) for r in records]}}


class Invalid(ValueError):
    """Data that is not a record; ``reason`` is a short key to count rejections by."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


@functools.lru_cache(maxsize=None)
def _types(annotation: str) -> tuple[type, ...]:
    """The JSON types a field's annotation allows ("float | None" -> int, float, NoneType)."""
    names = {"str": str, "bool": bool, "int": int, "float": (int, float), "dict": dict, "list": list,
             "None": type(None)}
    found = []
    for part in annotation.split("|"):
        kind = names[part.strip()]
        found += kind if isinstance(kind, tuple) else [kind]
    return tuple(found)


def _bad_number(value) -> bool:
    """A number that cannot be a time, a count or a size: negative, NaN, infinite, or past a float."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return not (math.isfinite(value) and value >= 0)
    except OverflowError:   # an int of thousands of digits
        return True


def from_json(data: object) -> Record:
    """The record a JSON object holds, checked: every field of its type (unknown fields ignored),
    numbers finite and not negative, a known role. Raises ``Invalid``."""
    if not isinstance(data, dict):
        raise Invalid("wrong type", f"a record is a JSON object, not {type(data).__name__}")
    values = {}
    for name, spec in Record.__dataclass_fields__.items():
        if name not in data:
            if spec.default is MISSING and spec.default_factory is MISSING:
                raise Invalid("missing field", name)
            continue
        value, allowed = data[name], _types(spec.type)
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            raise Invalid("wrong type", f"{name} is {type(value).__name__}, not {spec.type}")
        if _bad_number(value) or (name == "round_medians" and any(
                not isinstance(v, (int, float)) or isinstance(v, bool) or _bad_number(v) for v in value)):
            raise Invalid("implausible value", f"{name} = {str(value)[:40]}")
        values[name] = value
    if values["role"] not in ROLES:
        raise Invalid("implausible value", f"role {values['role'][:40]!r} is not one of {ROLES}")
    return Record(**values)


def load(path: Path | None = None) -> list[Record]:
    """Read records back. A malformed line raises ValueError naming the file and line."""
    path = Path(path) if path is not None else records_path()
    if path is None or not path.exists():
        return []
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(from_json(json.loads(line)))
        except ValueError as exc:  # JSONDecodeError and Invalid
            raise ValueError(f"{path}:{number}: not a measurement record ({exc})") from exc
    return records
