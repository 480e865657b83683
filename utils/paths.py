"""Where things are in a checkout: the one home of the repository's paths (no imports, no torch)."""
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO_ROOT / "solutions"   # the source notebooks
NOTEBOOKS = REPO_ROOT / "notebooks"   # the released notebooks, generated from SOLUTIONS
BUILD = REPO_ROOT / "build"           # make run's outputs
