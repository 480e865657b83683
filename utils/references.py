"""Reference results: records of named runs on other devices (GPUs), shipped with the course.

A learner on a laptop sees, under each of their comparisons, what a reference GPU measured for
the same comparison. Each reference is a folder ``references/<name>/`` holding the records the
course's own runner wrote (``measurements.jsonl``, never edited) and ``run.json`` (device,
torch, commit, mode). A reference comparison is shown only when its tip, title and variants
are the learner's and its sizes are the ones the notebook picks *today* for that device (see
``bench.sizes``): after a demo is resized, its old references disappear until a new run.

    python -m utils.references add build --name h100-2026-12-01       # after a GPU run
    python -m utils.references add runs/m.jsonl --name x --commit SHA  # records without run.json
    python -m utils.references list
"""
from __future__ import annotations

import argparse
import functools
import json
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from . import records
from .comparison import Comparison, Demo, group_records, sizes_key
from .paths import REPO_ROOT

REFERENCES = REPO_ROOT / "references"
MANIFEST = "run.json"
RECORDS = "measurements.jsonl"
_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{0,63}")


@dataclass
class ReferenceRun:
    name: str
    manifest: dict
    comparisons: list

    @property
    def device_type(self) -> str:
        return str(self.manifest.get("device", "cuda")).split(":")[0]

    @property
    def quick(self) -> bool:
        return manifest_quick(self.manifest)

    def describe(self, device_name: str = "") -> str:
        """The run in a few words; ``device_name``: what measured (a comparison on its host CPU), else its GPU."""
        m = self.manifest
        return (f"{device_name or m.get('device_name', '?')}, torch {m.get('torch', '?')}, commit {str(m.get('commit', '?'))[:10]}, "
                f"{'QUICK' if self.quick else 'full'} mode, run '{self.name}'")


def manifest_quick(manifest: dict) -> bool:
    """A run's mode: ``quick`` (true/false); manifests written before 2026-11-26 said ``mode``."""
    if "quick" in manifest:
        return bool(manifest["quick"])
    return manifest.get("mode") == "quick"


def load_runs(root: Path | None = None) -> list[ReferenceRun]:
    """Every stored reference run (``REFERENCES`` unless a root is given); cached."""
    return list(_load_runs(Path(root or REFERENCES).resolve()))


@functools.lru_cache(maxsize=4)
def _load_runs(root: Path) -> tuple[ReferenceRun, ...]:
    runs = []
    for folder in sorted(p for p in root.glob("*") if (p / MANIFEST).is_file()):
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        groups = group_records(records.load(folder / RECORDS))
        runs.append(ReferenceRun(folder.name, manifest, [Comparison.from_records(g) for g in groups]))
    return tuple(runs)


def expected_sizes(demo: Demo, run: ReferenceRun) -> dict:
    """The sizes the demo's notebook picks on the reference run's device and mode."""
    if demo.sizes_spec:
        return demo.sizes_spec[sizes_key(run.device_type, run.quick)]
    return demo.sizes


def same_demo(a: Demo, b: Demo) -> bool:
    return (a.tip, a.title, list(a.labels)) == (b.tip, b.title, list(b.labels))


def matching(demo: Demo, root: Path | None = None) -> list[tuple[ReferenceRun, Comparison]]:
    """Reference comparisons of the same demo at the sizes the notebook uses today on their device."""
    found = []
    for run in load_runs(root):
        for ref in run.comparisons:
            if same_demo(demo, ref.demo) and _jsonish(ref.sizes) == _jsonish(expected_sizes(demo, run)):
                found.append((run, ref))
                break
    return found


def _jsonish(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


# ---------------------------------------------------------------- command line

def add(source: Path, name: str, commit: str | None = None, force: bool = False, root: Path | None = None) -> Path:
    """Copy a run's records into ``references/<name>/`` with its manifest; returns the folder."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"reference name {name!r}: use lowercase letters, digits, '.' and '-' (e.g. h100-2026-12-01)")
    source = Path(source)
    jsonl = source / RECORDS if source.is_dir() else source
    if not jsonl.is_file():
        raise FileNotFoundError(f"{jsonl}: no measurement records there (run `python -m utils.execute` first)")
    loaded = records.load(jsonl)
    if not loaded:
        raise ValueError(f"{jsonl} holds no records")
    manifest_path = source / MANIFEST if source.is_dir() else source.with_name(MANIFEST)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.is_file() else {}
    if commit:
        manifest["commit"] = commit
    if not manifest.get("commit"):
        raise ValueError(f"no {MANIFEST} beside {jsonl} names the commit: pass --commit SHA")
    # Host-side comparisons (T015's copies, T070's PNG encoding) run on the CPU in a GPU run too.
    gpus = {r.device.split(":")[0] for r in loaded} - {"cpu"}
    if len(gpus) > 1:
        raise ValueError(f"{jsonl} mixes devices {sorted(gpus)}: a reference is one device's run")
    notebook_device = gpus.pop() if gpus else "cpu"
    quick = {r.quick for r in loaded}
    if len(quick) != 1:
        raise ValueError(f"{jsonl} mixes QUICK and full records: a reference is one run in one mode")
    names = {r.device_name for r in loaded if r.device.split(":")[0] == notebook_device}
    manifest.pop("mode", None)
    manifest.update({"device": notebook_device, "device_name": " / ".join(sorted(names)),
                     "torch": sorted({r.torch for r in loaded})[-1], "quick": quick.pop(), "records": len(loaded)})
    target = Path(root or REFERENCES) / name
    if target.exists() and not force:
        raise FileExistsError(f"{target} exists: pass --force to replace it")
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(jsonl, target / RECORDS)
    (target / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    _load_runs.cache_clear()
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m utils.references", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    add_p = sub.add_parser("add", help="store a run's records as a named reference")
    add_p.add_argument("source", type=Path, help="a run's output folder (measurements.jsonl + run.json) or a .jsonl")
    add_p.add_argument("--name", required=True)
    add_p.add_argument("--commit", help="the course commit the run used (when the source has no run.json)")
    add_p.add_argument("--force", action="store_true", help="replace an existing reference of that name")
    sub.add_parser("list", help="the stored references")
    args = parser.parse_args(argv)
    if args.command == "list":
        for run in load_runs():
            print(f"{run.name}\t{run.describe()}\t{len(run.comparisons)} comparisons")
        return 0
    try:
        print(f"stored {add(args.source, args.name, args.commit, args.force)}")
    except (ValueError, FileNotFoundError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
