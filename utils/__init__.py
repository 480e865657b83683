"""The course's toolkit: every notebook starts with ``from utils import ...``.

- ``setup``: pick the device and the measuring mode from the papermill parameters.
- ``bench``: honest timing; ``compare``, ``sweep`` and ``timeline`` measure and show a tip.
- ``memory``: peak memory of a call on CPU or CUDA.
- ``Table``: small tables.

The layers, each importing only those below it: ``paths``, ``units``, ``tables``, ``priority``;
``records``; ``comparison`` (the data model); ``device``, ``memory``, ``verdict``, ``why``;
``claims``, ``references``, ``plots``; ``present`` (cards); ``trace``; ``bench``; ``session``;
``report``; ``execute``. Names load on first use, so ``import utils.paths`` (the grader) stays free
of torch.
"""
from __future__ import annotations

import importlib
import logging
import os
import sys

# Quiet two kinds of start-up noise that learners cannot act on (and that plain nbgrader
# would count as a failing cell): kineto's per-profile trace lines (read when torch loads,
# so this must come before torch is imported) and cpp_extension's "No CUDA runtime" notice.
os.environ.setdefault("KINETO_LOG_LEVEL", "6")
logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)
# jsonschema (nbformat validates notebooks with it) imports rfc3987_syntax where installed, for the
# "iri" string format, and that module compiles some 35 Lark grammars on import: over a second of
# CPU in every process that reads a notebook (each grader and runner command). No notebook or
# Jupyter schema uses the format; a failed import makes jsonschema skip that one checker
# (python-jsonschema/jsonschema#1428).
sys.modules.setdefault("rfc3987_syntax", None)

_NAMES = {"Table": "tables", "setup": "session", "device_name": "device", "env_report": "device",
          "pick_device": "device", "seed_everything": "device"}
__all__ = ["Table", "bench", "device_name", "env_report", "memory", "pick_device", "records",
           "seed_everything", "setup"]


def __getattr__(name: str):
    """``from utils import setup``: the name's module is imported when it is first asked for."""
    if name in _NAMES:
        return getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    if name in __all__:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'utils' has no attribute {name!r}")
