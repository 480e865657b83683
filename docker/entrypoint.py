#!/usr/bin/env python3
"""The container's entry point: give the learner's work folder every released notebook it lacks,
then run the command (by default JupyterLab in that folder).

The work folder ($COURSE_WORK) is meant to be a mounted volume, so the learner's notebooks outlive
the container. The first start fills an empty volume; a newer image adds the notebooks it brings;
a file the learner already has is never overwritten (delete one to get a fresh copy next start).

    python docker/entrypoint.py COMMAND [ARG...]
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

RELEASED = Path(os.environ.get("COURSE_NOTEBOOKS", Path(__file__).resolve().parent.parent / "notebooks"))
WORK = Path(os.environ.get("COURSE_WORK", Path.home() / "work"))


def fill(released: Path, work: Path) -> list[Path]:
    """Copy each file under ``released`` that ``work`` lacks; return the copies made."""
    copied = []
    for source in sorted(p for p in released.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts):
        target = work / source.relative_to(released)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with source.open("rb") as src, target.open("xb") as dst:  # "x": never replaces a file
                shutil.copyfileobj(src, dst)
        except FileExistsError:
            continue
        copied.append(target)
    return copied


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: entrypoint.py COMMAND [ARG...]")
    if not RELEASED.is_dir():
        sys.exit(f"entrypoint: no released notebooks at {RELEASED} (set COURSE_NOTEBOOKS)")
    try:
        copied = fill(RELEASED, WORK)
    except OSError as exc:
        sys.exit(f"entrypoint: uid {os.getuid()} cannot fill the work folder {WORK}: {exc}. Create the "
                 "host folder before `docker run` (mkdir -p), owned by your user, and build the image "
                 "for your uid: docker build --build-arg LEARNER_UID=$(id -u) ...")
    if copied:
        print(f"entrypoint: copied {len(copied)} released notebook file(s) into {WORK}", file=sys.stderr)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        sys.exit(f"entrypoint: cannot run {argv[0]}: {exc.strerror}")


if __name__ == "__main__":
    main(sys.argv[1:])
