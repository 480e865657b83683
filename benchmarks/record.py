"""The one home of dated figures: ``docs/measurements.md``, written by the benchmarks, never by hand.

A benchmark run with ``--record`` prints as usual and also replaces its own section of the page
with what it printed, under a line naming the date, the commit, the cores and the load average
before and after. The prose in ``docs/`` links to the page instead of quoting figures that go stale.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

PAGE = Path(__file__).resolve().parent.parent / "docs" / "measurements.md"
HEAD = ("# Measurements\n\nGenerated: each section is what a benchmark printed when run with `--record`, "
        "on the machine named there. Do not edit by hand; run the command again.\n")


class _Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
            stream.flush()
        return len(text)


def _commit() -> str:
    root = PAGE.parent.parent
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                f":!{PAGE.relative_to(root).as_posix()}"],   # the page's own new sections
                               cwd=root, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "an unknown commit"
    return sha + (" with uncommitted changes" if dirty else "")


def write_section(name: str, command: str, text: str, load_before: float, page: Path = PAGE) -> None:
    """Replace (or add) the section ``name`` of ``page``."""
    stamp = (f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, commit {_commit()}, {os.cpu_count()} cores, "
             f"load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after")
    section = (f"<!-- {name}:start -->\n## {name}\n\n`{command}`: {stamp}.\n\n```text\n{text.rstrip()}\n```\n"
               f"<!-- {name}:end -->\n")
    old = page.read_text(encoding="utf-8") if page.exists() else HEAD
    pattern = re.compile(rf"<!-- {re.escape(name)}:start -->.*?<!-- {re.escape(name)}:end -->\n", re.S)
    new = pattern.sub(lambda _: section, old) if pattern.search(old) else old.rstrip("\n") + "\n\n" + section
    page.write_text(new, encoding="utf-8")


@contextlib.contextmanager
def recording(name: str, enabled: bool):
    """Within the block, what is printed also goes to the section ``name`` of the page (if ``enabled``)."""
    if not enabled:
        yield
        return
    captured, load = io.StringIO(), os.getloadavg()[0]
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(PAGE.parent.parent) if script.is_relative_to(PAGE.parent.parent) else script
    command = " ".join(["python", shown.as_posix(), *sys.argv[1:]])
    with contextlib.redirect_stdout(_Tee(sys.stdout, captured)):
        yield
    write_section(name, command.replace(" --record", ""), captured.getvalue(), load)
    print(f"recorded in {PAGE}")
