"""The claims ledger: the sources' speed and memory claims (``claims.toml``) against measurements.

Each claim names a tip, its source, the claimed factor as a range (``low``..``high``) and,
when the course measures it, the comparison row that does (``measure``). ``evaluate`` holds
each claim against the records of this run and of the reference runs, one device at a time:

- **reproduced**: the verdict on that device goes the claimed way (a gain, a cost, or no difference)
  and a claimed gain reaches ``low``;
- **not reproduced**: it was measured and did not;
- **not measurable here**: no such measurement on that device, the comparison was launch-bound,
  or the claim is about GPUs and the device is a CPU.

Across devices: all reproduced, all not reproduced, a mix (**device-dependent**), or nothing
measurable.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .comparison import Comparison, Timing
from .verdict import SAME_MEMORY, time_verdict

LEDGER = Path(__file__).with_name("claims.toml")
REPRODUCED, NOT_REPRODUCED, DEVICE_DEPENDENT, NOT_MEASURABLE = (
    "reproduced", "not reproduced", "device-dependent", "not measurable here")
_FIELDS = {"id", "tip", "source", "claim", "metric", "low", "high", "condition", "note", "device", "measure"}


@dataclass(frozen=True)
class Claim:
    id: str
    tip: str
    source: str
    claim: str
    metric: str          # "time" or "memory"
    low: float
    high: float
    condition: str = ""
    note: str = ""
    device: str = "any"  # "gpu": the claim is about GPUs, a CPU cannot test it
    measure: dict = field(default_factory=dict)  # {tip, title, variant[, against]}: the row that tests it

    @property
    def direction(self) -> str:
        """What the claim expects: "gain" (faster / less memory), "cost" (slower / more), or "none"."""
        if self.low == self.high == 1:
            return "none"
        return "cost" if self.high <= 1 else "gain"

    def claimed(self) -> str:
        time = self.metric == "time"
        if self.direction == "none":
            return "no difference"
        if self.direction == "cost":
            return "slower" if time else "more memory"
        unit = "x speed" if time else "x less memory"
        if math.isinf(self.high):
            return f">= {self.low:g}{unit}" if self.low > 1 else ("faster" if time else "less memory")
        if self.low <= 1:
            return f"up to {self.high:g}{unit}"
        return f"{self.low:g}{unit}" if self.low == self.high else f"{self.low:g}-{self.high:g}{unit}"


def load(path: Path | None = None) -> list[Claim]:
    """Read and validate the ledger (``LEDGER`` unless a path is given); a malformed entry raises
    ValueError naming it."""
    path = Path(path or LEDGER)
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    claims, seen = [], set()
    for entry in data.get("claim", []):
        where = f"{path}: claim {entry.get('id', '?')}"
        unknown = set(entry) - _FIELDS
        if unknown:
            raise ValueError(f"{where}: unknown fields {sorted(unknown)}")
        try:
            claim = Claim(**entry)
        except TypeError as exc:
            raise ValueError(f"{where}: {exc}") from exc
        if claim.id in seen:
            raise ValueError(f"{where}: duplicate id")
        if claim.metric not in ("time", "memory") or claim.device not in ("any", "gpu"):
            raise ValueError(f"{where}: metric must be time|memory and device any|gpu")
        if not 0 < claim.low <= claim.high:
            raise ValueError(f"{where}: need 0 < low <= high, got {claim.low}..{claim.high}")
        if claim.measure and not {"tip", "title", "variant"} <= set(claim.measure) <= {"tip", "title", "variant",
                                                                                          "against"}:
            raise ValueError(f"{where}: measure needs tip, title and variant (and optionally against)")
        seen.add(claim.id)
        claims.append(claim)
    return claims


@dataclass
class Finding:
    """One claim on one device."""
    run: str              # "this run" or a reference run's name
    device_name: str
    factor: float | None
    verdict: str
    why: str = ""


def find_row(claim: Claim, comparisons: list[Comparison]) -> tuple[Comparison, Timing] | None:
    """The (comparison, row) that measures a claim in a list of comparisons, or None. With
    ``against``, the comparison is narrowed to that variant (as its baseline) and the row."""
    if not claim.measure:
        return None
    wanted = claim.measure
    for comparison in comparisons:
        labels = [row.label for row in comparison.rows]
        if (comparison.tip, comparison.title) == (wanted["tip"], wanted["title"]) and wanted["variant"] in labels:
            if wanted.get("against") not in (None, *labels):
                continue
            return comparison.pair(wanted["variant"], wanted.get("against"))
    return None


def judge(claim: Claim, comparison: Comparison, row: Timing) -> tuple[float | None, str, str]:
    """(measured factor, verdict, why) of one claim on one comparison."""
    gpu = comparison.on_gpu
    if claim.metric == "memory":
        if row.peak_bytes is None or not comparison.baseline.peak_bytes:
            return None, NOT_MEASURABLE, "memory was not measured"
        factor = comparison.baseline.peak_bytes / row.peak_bytes if row.peak_bytes else math.inf
        effect = "gain" if factor > 1 + SAME_MEMORY else "cost" if factor < 1 - SAME_MEMORY else "none"
    else:
        factor = comparison.speedup(row)
        kind = time_verdict(comparison, row).kind if row.round_medians else "no verdict"
        if kind in ("launch-bound", "no verdict", "one round"):
            return factor, NOT_MEASURABLE, {"launch-bound": "launch-bound comparison",
                                            "no verdict": "recorded without per-round data",
                                            "one round": "a single round"}[kind]
        effect = {"faster": "gain", "slower": "cost"}.get(kind, "none")
    if claim.device == "gpu" and not gpu:
        return factor, NOT_MEASURABLE, "the claim is about GPUs"
    if effect != claim.direction:
        return factor, NOT_REPRODUCED, {"gain": "it was faster/smaller", "cost": "it was slower/larger",
                                        "none": "no clear effect"}[effect]
    if claim.direction == "gain" and factor < claim.low:
        return factor, NOT_REPRODUCED, "smaller than claimed"
    beyond = claim.direction == "gain" and factor > claim.high
    return factor, REPRODUCED, "above the claimed range" if beyond else ""


def evaluate(claim: Claim, runs: list[tuple[str, list[Comparison]]]) -> tuple[list[Finding], str]:
    """Findings per run/device and the overall verdict. ``runs``: (name, comparisons) pairs."""
    findings = []
    for name, comparisons in runs:
        found = find_row(claim, comparisons)
        if found:
            comparison, row = found
            factor, verdict, why = judge(claim, comparison, row)
            findings.append(Finding(name, comparison.device_name, factor, verdict, why))
    decided = {f.verdict for f in findings} - {NOT_MEASURABLE}
    if not decided:
        return findings, NOT_MEASURABLE
    return findings, decided.pop() if len(decided) == 1 else DEVICE_DEPENDENT

