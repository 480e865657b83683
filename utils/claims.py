"""The claims ledger: the sources' speed and memory claims (``claims.toml``) against measurements.

Each claim names a tip, its source, the claimed factor as a range (``low``..``high``) and,
when the course measures it, the comparison row that does (``measure``). ``evaluate`` holds
each claim against the records of this run and of the reference runs, one device at a time, by
one rule:

- **reproduced**: the verdict on that device goes the claimed way (a gain, a cost, or no
  difference) and, where the claim gives a range, the measured factor lies in it;
- **not reproduced**: it was measured and did not; a factor outside the range says "smaller
  than claimed" or "larger than claimed", with both numbers;
- **not measurable here**: no such measurement on that device, the comparison was launch-bound,
  or the claim is about GPUs and the device is a CPU.

A time claim is judged on the clock its verdict was judged on (``utils.verdict``): GPU time for a
host-bound pair or where the clocks disagree, the wall clock otherwise.

A claim is judged on the row that matches its condition: ``measure.variant`` names it, or lists
the settings tried, and then the claim is judged on the fastest of them (the best setting found).
``scale`` names a size the range is per unit of ("a gain equal to the number of requests");
``below`` names claims whose measured gains, in the same run, bound this one's from above.

Across devices: all reproduced, all not reproduced, a mix (**device-dependent**), or nothing
measurable.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .comparison import Comparison, Timing
from .units import format_ratio
from .verdict import SAME_MEMORY, time_verdict

LEDGER = Path(__file__).with_name("claims.toml")
REPRODUCED, NOT_REPRODUCED, DEVICE_DEPENDENT, NOT_MEASURABLE = (
    "reproduced", "not reproduced", "device-dependent", "not measurable here")
_FIELDS = {"id", "tip", "source", "claim", "metric", "low", "high", "condition", "note", "device", "measure",
           "scale", "below"}


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
    scale: str = ""      # a size of the comparison: the range is per unit of it
    below: tuple = ()    # claims whose measured gains bound this one's from above

    @property
    def direction(self) -> str:
        """What the claim expects: "gain" (faster / less memory), "cost" (slower / more), or "none"."""
        if self.low == self.high == 1 and not self.scale:
            return "none"
        return "cost" if self.high <= 1 and not self.scale else "gain"

    def claimed(self) -> str:
        time = self.metric == "time"
        if self.direction == "none":
            return "no difference"
        if self.direction == "cost":
            return "slower" if time else "more memory"
        if self.scale:
            per = "" if self.low == self.high == 1 else f"{_span(self.low, self.high)} x "
            return f"a speed-up of {per}the number of {self.scale}"
        if self.below:
            return f"faster, by less than the gains of {' and '.join(self.below)}"
        unit = "x speed" if time else "x less memory"
        if math.isinf(self.high) and self.low <= 1:
            return "faster" if time else "less memory"
        return _range(self.low, self.high) + unit

    def bounds(self, comparison: Comparison) -> tuple[float, float]:
        """The claimed range on this comparison: ``low``..``high``, times its ``scale`` size."""
        factor = float(comparison.sizes[self.scale]) if self.scale else 1.0
        return self.low * factor, self.high * factor


def _span(low: float, high: float) -> str:
    return f"{low:g}" if low == high else f"{low:g}-{high:g}"


def _range(low: float, high: float, number=lambda value: f"{value:g}") -> str:
    if low == high:
        return number(low)
    if math.isinf(high):
        return f">= {number(low)}"
    return f"up to {number(high)}" if low <= 1 else f"{number(low)}-{number(high)}"


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
            claim = Claim(**{**entry, "below": tuple(entry.get("below", ()))})
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
    reason: str = ""      # the verdict in a few words, e.g. "smaller than claimed: 1.2x against 2x"


def variants(claim: Claim) -> list[str]:
    """The labels of the rows a claim may be judged on (several: the best of them counts)."""
    wanted = claim.measure.get("variant", [])
    return [wanted] if isinstance(wanted, str) else list(wanted)


def find_row(claim: Claim, comparisons: list[Comparison]) -> tuple[Comparison, Timing] | None:
    """The (comparison, row) that measures a claim in a list of comparisons, or None: of several
    listed variants, the fastest. With ``against``, the comparison is narrowed to that variant
    (as its baseline) and the row."""
    if not claim.measure:
        return None
    wanted = claim.measure
    for comparison in comparisons:
        labels = [row.label for row in comparison.rows]
        present = [label for label in variants(claim) if label in labels]
        if (comparison.tip, comparison.title) != (wanted["tip"], wanted["title"]) or not present:
            continue
        if wanted.get("against") not in (None, *labels):
            continue
        best = min(present, key=lambda label: comparison.row(label).median)
        return comparison.pair(best, wanted.get("against"))
    return None


def judge(claim: Claim, comparison: Comparison, row: Timing,
          ceiling: float = math.inf) -> tuple[float | None, str, str]:
    """(measured factor, verdict, why) of one claim on one comparison; ``ceiling``: the gain of the
    claims it is ``below``."""
    if claim.metric == "memory":
        if row.peak_bytes is None or not comparison.baseline.peak_bytes:
            return None, NOT_MEASURABLE, "memory was not measured"
        factor = comparison.baseline.peak_bytes / row.peak_bytes if row.peak_bytes else math.inf
        effect = "gain" if factor > 1 + SAME_MEMORY else "cost" if factor < 1 - SAME_MEMORY else "none"
    else:
        factor = comparison.speedup(row)
        verdict = time_verdict(comparison, row) if row.round_medians else None
        if verdict is None or verdict.kind in ("launch-bound", "one round"):
            return factor, NOT_MEASURABLE, _unjudged(verdict)
        if verdict.clock == "GPU":   # judged on GPU time (utils.verdict): the claim is too, on its ratio
            factor = verdict.ratio
        effect = {"faster": "gain", "slower": "cost"}.get(verdict.kind, "none")
    if claim.device == "gpu" and not comparison.on_gpu:
        return factor, NOT_MEASURABLE, "the claim is about GPUs"
    if claim.scale and claim.scale not in comparison.sizes:
        return factor, NOT_MEASURABLE, f"the comparison records no {claim.scale}"
    if effect != claim.direction:
        return factor, NOT_REPRODUCED, {"gain": "it was faster/smaller", "cost": "it was slower/larger",
                                        "none": "no clear effect"}[effect]
    low, high = claim.bounds(comparison)
    high = min(high, ceiling)
    if claim.direction == "none" or low <= factor <= high:
        return factor, REPRODUCED, ""
    size = "smaller" if factor < low else "larger"
    claimed = _range(low, high, lambda v: format_ratio(v).removesuffix("x"))
    return factor, NOT_REPRODUCED, f"{size} than claimed: {format_ratio(factor)} against {claimed}x"


def gain(comparison: Comparison, row: Timing) -> float:
    """The speed-up of ``row`` on the clock its verdict is judged on (GPU time or the wall clock)."""
    verdict = time_verdict(comparison, row)
    return verdict.ratio if verdict.clock == "GPU" and verdict.ratio is not None else comparison.speedup(row)


def _unjudged(verdict) -> str:
    if verdict is None:
        return "recorded without per-round data"
    if verdict.kind == "one round":
        return "a single round"
    return "launch-bound comparison"


def assess(claim: Claim, comparisons: list[Comparison],
           ledger: list[Claim] = ()) -> tuple[Comparison, float | None, str, str] | None:
    """(comparison, factor, verdict, why) of a claim in one run's comparisons, or None where none
    measures it. A claim ``below`` others is bounded by their gains in the same comparisons."""
    found = find_row(claim, comparisons)
    if not found:
        return None
    bounds = {other.id: find_row(other, comparisons) for other in ledger if other.id in claim.below}
    missing = [name for name in claim.below if bounds.get(name) is None]
    if missing:
        return found[0], gain(*found), NOT_MEASURABLE, f"{' and '.join(missing)} not measured beside it"
    ceiling = min((gain(comparison, row) for comparison, row in bounds.values()), default=math.inf)
    return found[0], *judge(claim, *found, ceiling=ceiling)


def evaluate(claim: Claim, runs: list[tuple[str, list[Comparison]]],
             ledger: list[Claim] | None = None) -> tuple[list[Finding], str]:
    """Findings per run/device and the overall verdict. ``runs``: (name, comparisons) pairs;
    ``ledger``: the claims a ``below`` names (default: the shipped ledger)."""
    if ledger is None:
        ledger = load() if claim.below else []
    findings = []
    for name, comparisons in runs:
        assessed = assess(claim, comparisons, ledger)
        if assessed:
            comparison, factor, verdict, why = assessed
            findings.append(Finding(name, comparison.device_name, factor, verdict, why))
    decided = {f.verdict for f in findings} - {NOT_MEASURABLE}
    if not decided:
        return findings, NOT_MEASURABLE
    return findings, decided.pop() if len(decided) == 1 else DEVICE_DEPENDENT
