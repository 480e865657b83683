"""A child in a session of its own keeps its parent's nice.

Linux schedules each session as a group of its own (autogroup), at nice 0 whatever the nice of
its processes. jupyter_client starts every kernel in a new session, and the course starts
torchrun's ranks in one: without this, `nice make run` would run the notebooks at full priority
beside other work. (grader/runner.py's ``keep_nice`` does the same inside a sandbox, which can
import nothing of the course's.)
"""
from __future__ import annotations

import os
import time
from pathlib import Path


def share_nice(pid: int) -> None:
    """Give the scheduling group of process ``pid`` (a session leader this process started) this
    process's nice; nothing where the kernel has no autogroups."""
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    give_up = time.monotonic() + 2
    while nice > 0:
        try:
            Path(f"/proc/{pid}/autogroup").write_text(str(nice))
            return
        except BlockingIOError:  # without CAP_SYS_ADMIN the kernel takes one such write per 0.1 s, machine-wide
            if time.monotonic() > give_up:
                return
            time.sleep(0.02)
        except OSError:  # a kernel without autogroups, or no /proc: there is no group to lower
            return
