"""The explanations of outcomes, as data: ``utils/why/NN_topic.toml``, one table per comparison.

A notebook never narrates its own result. Each comparison has a key (its tip, or the ``why``
of its ``bench.Options``), and its table holds one sentence per device kind and outcome; the
toolkit picks the sentence from the measurement (``utils.present``) and fills in its figures.

    [T013]
    gpu.faster = "The baseline fills {shape} in host memory and copies it over the bus; ..."
    cpu.same = "On a CPU .to('cpu') returns the tensor itself: both rows do the same work."
    cpu.note = "On a GPU the baseline also pays a host-to-device copy of the whole tensor."

Device kinds: ``cpu``, ``gpu`` (CUDA or MPS), ``any``. Outcomes: ``faster``, ``slower``,
``same`` (no clear difference), ``launch_bound``, ``one_round``; for a comparison about memory
(``bench.Options(metric="memory")``) ``less_memory``, ``more_memory`` and ``same_memory``
instead; ``otherwise`` (any outcome
without a sentence of its own), ``note``, shown whatever the measured outcome, and
``unmeasured``: what a demo this device cannot run would show (``bench.Options(needs="cuda")``),
shown alone. The device's own
sentence wins over ``any``'s. ``{name}`` fields are filled from the comparison (see
``utils.present.fields``).
"""
from __future__ import annotations

import functools
import string
import tomllib
from pathlib import Path

FOLDER = Path(__file__).with_name("why")
DEVICES = ("cpu", "gpu", "any")
OUTCOMES = ("faster", "slower", "same", "launch_bound", "one_round", "less_memory", "more_memory", "same_memory",
            "otherwise", "note", "unmeasured")
# utils.verdict's kinds, as the tables spell them
OUTCOME_OF_KIND = {"faster": "faster", "slower": "slower", "no clear difference": "same",
                   "launch-bound": "launch_bound", "one round": "one_round", "unmeasured": "unmeasured",
                   "less memory": "less_memory", "more memory": "more_memory", "same memory": "same_memory"}


def load(folder: Path | None = None) -> dict[str, dict[str, dict[str, str]]]:
    """Every table in ``folder`` (default: utils/why), validated: {key: {device: {outcome: text}}}."""
    return dict(_load(Path(folder or FOLDER).resolve()))


@functools.lru_cache(maxsize=4)
def _load(folder: Path) -> tuple[tuple[str, dict], ...]:
    tables: dict[str, dict] = {}
    for path in sorted(folder.glob("*.toml")):
        for key, table in tomllib.loads(path.read_text(encoding="utf-8")).items():
            where = f"{path.name}: [{key}]"
            if key in tables:
                raise ValueError(f"{where} is defined twice: each comparison key lives in one table")
            tables[key] = _validate(table, where)
    return tuple(tables.items())


def _validate(table: object, where: str) -> dict[str, dict[str, str]]:
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table of device kinds ({', '.join(DEVICES)})")
    for device, sentences in table.items():
        if device not in DEVICES or not isinstance(sentences, dict):
            raise ValueError(f"{where}: {device!r} is not a table of one of the device kinds {DEVICES}")
        for outcome, text in sentences.items():
            if outcome not in OUTCOMES:
                raise ValueError(f"{where}: {device}.{outcome} is not an outcome; use one of {OUTCOMES}")
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"{where}: {device}.{outcome} must be a non-empty sentence")
            try:
                list(string.Formatter().parse(text))
            except ValueError as exc:
                raise ValueError(f"{where}: {device}.{outcome} is not a valid template ({exc})") from exc
    return table


def templates(key: str, device_kind: str, verdict_kind: str) -> list[str]:
    """The sentences for an outcome: the outcome's own (or ``otherwise``), then the ``note``."""
    table = load().get(key, {})
    outcome = OUTCOME_OF_KIND.get(verdict_kind, "otherwise")
    if outcome == "unmeasured":  # its own sentence only: a note may quote figures that were never measured
        return [t for t in (table.get(device_kind, {}).get(outcome), table.get("any", {}).get(outcome)) if t][:1]
    found = []
    for wanted in ((outcome, "otherwise"), ("note",)):
        choices = [table.get(device, {}).get(o) for o in wanted for device in (device_kind, "any")]
        text = next((c for c in choices if c), None)
        if text:
            found.append(text)
    return found


def field_names(template: str) -> set[str]:
    """The ``{fields}`` a template asks for."""
    return {name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(template) if name}
