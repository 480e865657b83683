"""Numbers in words: times, bytes, ratios and sizes, each formatted one way for the whole course.

Two or three significant figures: a learner reads "595x", not "594.79x".
"""
from __future__ import annotations

import math
import re

_SENTENCE_END = re.compile(r"(?<=[A-Za-z0-9)%])\.(?:\s|$)")  # "1.47x" and "loss.item()" do not end one


def format_seconds(seconds: float | None) -> str:
    """0.00629 -> '6.29 ms'. None (not measured) -> '-'."""
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def format_bytes(n: float | None) -> str:
    """1536 -> '1.5 KiB'. None (not measured) -> '-'."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_ratio(ratio: float) -> str:
    """Three significant figures at most: 1.4712 -> '1.47x', 13.04 -> '13.0x', 594.79 -> '595x',
    0.00417 -> '0.0042x'."""
    if not math.isfinite(ratio):
        return f"{ratio}x"
    if ratio >= 100:
        return f"{ratio:.0f}x"
    if ratio < 0.1:
        return f"{ratio:.2g}x"  # 0.0042x, not 0.00x
    return f"{ratio:.1f}x" if ratio >= 10 else f"{ratio:.2f}x"


def format_number(value: float) -> str:
    """Three significant figures, no exponent below a billion: 19.437 -> '19.4', 1234.5 -> '1234'."""
    if value == 0 or not math.isfinite(value):
        return str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def format_sizes(sizes: dict) -> str:
    """{'n': 2048, 'dtype': 'float32'} -> 'n=2048, dtype=float32'."""
    return ", ".join(f"{k}={v}" for k, v in sizes.items())


def first_sentence_words(text: str) -> int:
    """Words (whitespace-separated) of ``text`` up to its first full stop: a headline's length."""
    return len(_SENTENCE_END.split(text.strip(), maxsplit=1)[0].split())
