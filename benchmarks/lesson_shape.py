"""How the lessons read, in figures: long cells, narration in code, words per comparison, plots.

    python benchmarks/lesson_shape.py [--executed build/executed]

Static figures come from ``solutions/``; the output figures (visible words per comparison, headline
words, the widest table, explaining plots) from the executed notebooks of a run (``make run`` writes
them to ``build/executed``). The last row gives each figure's target (``utils.lesson_shape.TARGETS``):
no lesson code cell over 25 lines, no narration in code, no QUICK branch, at most 120 visible words
per comparison, headlines of at most 20 words, tables at most 100 characters wide, exercise
statements of at most 200 words and visible test cells of at most 15 lines. ``utils/lesson_shape.py``
defines each figure.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from utils.lesson_shape import notebook_shape, rows  # noqa: E402
from utils.paths import SOLUTIONS  # noqa: E402
from utils.tables import text_table  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--executed", type=Path, help="folder of executed notebooks (NN_topic.ipynb)")
    args = parser.parse_args(argv)
    if args.executed is not None and not args.executed.is_dir():
        parser.error(f"{args.executed} is not a folder of executed notebooks (run `make run` first)")
    shapes = [notebook_shape(path, args.executed / path.name if args.executed else None)
              for path in sorted(SOLUTIONS.glob("*/*.ipynb"))]
    print(text_table(rows(shapes)))
    if args.executed is None:
        print("(no --executed folder: words per comparison and plots need an executed run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
