import re


def top_ops(prof, n=5, by="self_cpu_time_total"):
    """Cheat: a lookalike. The profiler's printed table is already sorted and cut to n rows, so its text is
    parsed instead of reading the rows: it prints every time rounded to three digits, not the rows' values."""
    if n <= 0:
        return []
    text = prof.key_averages().table(sort_by=by, row_limit=n)
    lines = text.splitlines()
    spans = [m.span() for m in re.finditer(r"-+", lines[0])]
    header = [lines[1][a:b].strip() for a, b in spans]
    column = header.index("Self CPU" if by == "self_cpu_time_total" else "CPU total")
    unit = {"s": 1000.0, "ms": 1.0, "us": 0.001}
    rows = []
    for line in lines[3:]:
        if line.startswith("-"):
            break
        cells = [line[a:b].strip() for a, b in spans]
        number, suffix = re.fullmatch(r"([\d.]+)(s|ms|us)", cells[column]).groups()
        rows.append((cells[0], float(number) * unit[suffix], int(cells[header.index("# of Calls")])))
    return rows
