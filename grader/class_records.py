"""The measurements a submitted notebook carries, read as untrusted data.

Each card a learner's run displayed holds its records (``utils.records.MIME`` data in the cell's
outputs; see ``utils.present``). They never change a grade and nothing in them is executed: this
module only parses JSON. Reading is bounded: a file over ``MAX_BYTES`` is refused from its size
alone, and the work after that is linear in at most ``MAX_BYTES``. A record that is malformed,
oversized or implausible is left out and counted by its reason, never crashed on:

    found = read(submitted / "00_measure_first.ipynb")
    found.records    # the accepted utils.records.Record objects, in notebook order
    found.rejected   # Counter: reason -> how many records (or 1 for a notebook refused whole)
"""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from utils import records, why

MAX_BYTES = 16 * 2**20      # an executed notebook is well under 1 MiB; figures are the bulk
MAX_RECORD_BYTES = 16_000   # a record's JSON (the longest recorded so far: 1.2 kB)
MAX_TEXT = 500              # one text field (device, title, variant...): the longest so far is 83
MAX_RECORDS = 5_000         # in one notebook (a full run of the largest notebook writes about 40)
SPEEDUP_TOLERANCE = 1e-6    # relative: speedup is the baseline's median over this one's, recomputed


@dataclass
class Found:
    records: list[records.Record] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)


class Refused(Exception):
    """The whole notebook is refused; the message is the reason counted."""


def course_tips() -> set[str]:
    """The tips the course measures: those with explanations in utils/why (a key is a tip ID,
    optionally followed by -name, and every measured comparison has one)."""
    return {key.split("-")[0] for key in why.load()}


def read(path: Path, tips: set[str] | None = None, max_bytes: int = MAX_BYTES) -> Found:
    """The records in the notebook at ``path`` whose tip is in ``tips`` (default: ``course_tips()``)."""
    tips = course_tips() if tips is None else tips
    found = Found()
    try:
        payloads = list(_payloads(_notebook(Path(path), max_bytes)))
    except Refused as exc:
        found.rejected[str(exc)] += 1
        return found
    seen = set()
    for payload in payloads:
        for record in _accepted(payload, tips, found.rejected):
            key = (record.comparison, record.variant)
            if key in seen or len(found.records) >= MAX_RECORDS:
                found.rejected["duplicate" if key in seen else "too many records"] += 1
                continue
            seen.add(key)
            found.records.append(record)
    return found


def _notebook(path: Path, max_bytes: int) -> dict:
    """The notebook's JSON, refused without reading it when the file is too large."""
    if not path.is_file():  # not a FIFO or a device, whose size says nothing
        raise Refused("not a file")
    if path.stat().st_size > max_bytes:
        raise Refused("oversized notebook")
    with open(path, "rb") as f:
        raw = f.read(max_bytes + 1)  # the file may have grown since stat()
    if len(raw) > max_bytes:
        raise Refused("oversized notebook")
    try:
        nb = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # not UTF-8, not JSON, too deep, a 5000-digit number
        raise Refused("not a notebook") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise Refused("not a notebook")
    return nb


def _payloads(nb: dict):
    """The records data of every output of every cell, whatever else the file holds."""
    for cell in nb["cells"]:
        outputs = cell.get("outputs") if isinstance(cell, dict) else None
        for output in outputs if isinstance(outputs, list) else []:
            data = output.get("data") if isinstance(output, dict) else None
            if isinstance(data, dict) and records.MIME in data:
                yield data[records.MIME]


def _accepted(payload: object, tips: set[str], rejected: Counter) -> list[records.Record]:
    """The records of one card's data that pass, alone and against their comparison's baseline."""
    items = payload.get("records") if isinstance(payload, dict) else None
    if not isinstance(items, list):
        rejected["malformed payload"] += 1
        return []
    valid = []
    for item in items:
        try:
            valid.append(_record(item, tips))
        except records.Invalid as exc:
            rejected[exc.reason] += 1
    baselines = Counter(r.comparison for r in valid if r.role == "baseline")
    base = {r.comparison: r for r in valid if r.role == "baseline"}
    accepted = []
    for record in valid:
        reason = "no baseline" if baselines[record.comparison] != 1 else _contradiction(record, base[record.comparison])
        if reason:
            rejected[reason] += 1
        else:
            accepted.append(record)
    return accepted


def _record(item: object, tips: set[str]) -> records.Record:
    """One record, checked: size first (before anything walks it), then the schema, then its tip."""
    try:
        size = len(json.dumps(item))
    except (ValueError, RecursionError):
        raise records.Invalid("malformed record", "not serializable") from None
    if size > MAX_RECORD_BYTES:
        raise records.Invalid("oversized record", f"{size} bytes")
    if isinstance(item, dict) and any(isinstance(v, str) and len(v) > MAX_TEXT for v in item.values()):
        raise records.Invalid("oversized record", f"a text over {MAX_TEXT} characters")
    record = records.from_json(item)
    if record.tip not in tips:
        raise records.Invalid("unknown tip", record.tip[:20])
    return record


def _contradiction(record: records.Record, baseline: records.Record) -> str | None:
    """Why a record disagrees with its comparison's baseline, or None."""
    if not record.median_s or not baseline.median_s or record.speedup is None:
        return "implausible value"   # a comparison row has a positive median and a speed-up
    if any(getattr(record, name) != getattr(baseline, name) for name in ("tip", "device", "torch", "quick")):
        return "inconsistent comparison"
    if not math.isclose(record.speedup, baseline.median_s / record.median_s, rel_tol=SPEEDUP_TOLERANCE):
        return "speed-up contradicts medians"
    return None
