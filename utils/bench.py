"""Honest timing (T005) and side-by-side comparison of a baseline and a tip.

Built on ``torch.utils.benchmark.Timer``: it warms up, synchronizes CUDA around every
block of runs, picks a block size so timer overhead is negligible, and reports the median
and interquartile range (IQR, from the 25th to the 75th percentile) of many runs. Variants are measured in interleaved rounds
(baseline, tip, baseline, tip, ...) so that a burst of background load hits both sides, and
the per-round medians let a verdict check that the ranking held in every round.

On CUDA each variant is also run once more under ``torch.profiler`` to read how much GPU
kernel time a call really contains: a comparison with too little GPU work measures Python
and kernel launches, and ``utils.verdict`` says so instead of judging the tip.
"""
from __future__ import annotations

import contextlib
import math
import numbers
import os
import time
import warnings
from typing import TYPE_CHECKING, Callable

import torch

from . import present, records, trace
from .comparison import Demo, Rate, Sizes, Timing, fact_text, sizes_key
from .device import device_name, synchronize
from .memory import peak_memory
from .present import NEEDS, Result, SweepResult, TimelineResult, Unmeasured
from .units import format_number
from .units import format_seconds  # noqa: F401  (notebooks call bench.format_seconds)

if TYPE_CHECKING:  # imported on first use: it pulls in cpp_extension and setuptools (~0.1 s per kernel start)
    from torch.utils import benchmark

# Each variant is timed for min_run_time per round, in blocks of ~1/BLOCKS_PER_ROUND of it.
# We size blocks ourselves: Timer.blocked_autorange grows the block by 10x steps until timer
# overhead is below 1e-4, which on short runs leaves one or two samples and no usable IQR.
# QUICK keeps two rounds: a verdict needs the ranking to hold in more than one round.
QUICK = {"min_run_time": 0.05, "rounds": 2, "quick": True}
FULL = {"min_run_time": 0.3, "rounds": 3, "quick": False}
BLOCKS_PER_ROUND = 20
MIN_BLOCK_S = 1e-3  # timer and sync overhead is a few µs: well under 1% of a block
PROFILED_CALLS = 3  # calls profiled per variant on CUDA to read its GPU kernel time
LONG_CALL_S = 10e-3  # a call this long is profiled once: profiling a thousand launches takes seconds
_settings = dict(FULL)


def configure(quick: bool) -> None:
    """QUICK mode (CI, first look) measures briefly; full mode measures longer and in more rounds."""
    _settings.update(QUICK if quick else FULL)


def is_quick() -> bool:
    return bool(_settings["quick"])


def sizes(device: torch.device | str, *, cpu: dict, quick: dict | None = None, gpu: dict | None = None) -> Sizes:
    """Pick a demo's sizes for the device: ``gpu`` on CUDA/MPS (in both modes: on a GPU, QUICK
    shortens the timing, not the sizes), ``quick`` on a CPU in QUICK mode, ``cpu`` otherwise."""
    spec = {"cpu": dict(cpu), "cpu-quick": dict(quick if quick is not None else cpu),
            "gpu": dict(gpu if gpu is not None else cpu)}
    if any(set(entry) != set(cpu) for entry in spec.values()):
        raise ValueError(f"cpu, quick and gpu sizes must name the same keys, got {[sorted(s) for s in spec.values()]}")
    return Sizes(spec[sizes_key(torch.device(device).type, is_quick())], spec)


def _timer(fn: Callable[[], object], label: str, device: torch.device) -> benchmark.Timer:
    if not callable(fn):
        raise TypeError(f"{label!r}: expected a function that takes no arguments, got {type(fn).__name__}")
    from torch.utils import benchmark

    stmt = "fn(); torch.mps.synchronize()" if device.type == "mps" else "fn()"
    # Timer defaults to ONE thread; measure with the threads the learner's code really gets.
    return benchmark.Timer(stmt=stmt, globals={"fn": fn, "torch": torch}, label=label, description=label,
                           num_threads=torch.get_num_threads())


def _timed(timer: benchmark.Timer, number: int) -> float:
    """Seconds for ``number`` calls through the Timer's own timing call, as its ``blocked_autorange``
    does: ``Timer.timeit`` would first run two untimed warm-up calls, seconds for a long call."""
    from torch.utils.benchmark.utils import common

    with common.set_torch_threads(timer._task_spec.num_threads):
        return timer._timeit(number)


def _block_size(timer: benchmark.Timer, min_run_time: float) -> int:
    """Calls per block so that a block lasts ~min_run_time / BLOCKS_PER_ROUND, from one timed call
    (the variant is already warm)."""
    one_call = _timed(timer, 1)
    target = max(min_run_time / BLOCKS_PER_ROUND, MIN_BLOCK_S)
    return max(1, math.ceil(target / max(one_call, 1e-9)))


def _drain(fn: Callable[[], object], ahead: int) -> None:
    """Untimed calls that use up what a variant prepared in the background while others ran."""
    for _ in range(ahead):
        fn()


def _refill(blocks: list[benchmark.Measurement], ahead: int) -> None:
    """After the round of a variant that works ``ahead`` calls in advance, wait as long as that many
    of its calls took: its background work (DataLoader workers, their pin-memory thread) finishes
    now, not during the next variant's round, where it would compete for cores and the GIL."""
    from torch.utils import benchmark

    if ahead:
        time.sleep(ahead * benchmark.Measurement.merge(blocks)[0].median)  # the round's median, as in per_round


def _run_round(timer: benchmark.Timer, number: int, min_run_time: float) -> list[benchmark.Measurement]:
    """Timed blocks until min_run_time has passed (at least 3 blocks, for an IQR).

    Each block is one ``_timed`` call: with ``Timer.timeit``'s two warm-up calls in every block,
    calls over a few milliseconds (one call a block) spent two thirds of a QUICK run warming up. The
    variant is warmed up once, before the first round."""
    from torch.utils.benchmark.utils import common

    blocks, spent = [], 0.0
    while spent < min_run_time or len(blocks) < 3:
        seconds = _timed(timer, number)
        blocks.append(common.Measurement(number_per_run=number, raw_times=[seconds], task_spec=timer._task_spec))
        spent += seconds
    return blocks


def _on_device(device: torch.device):
    """Make ``device`` current: Timer synchronizes the *current* CUDA device, so timing cuda:1
    while cuda:0 is current would stop the clock before cuda:1's kernels finish."""
    return torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()


def gpu_seconds_per_call(fn: Callable[[], object], device: torch.device, calls: int = PROFILED_CALLS) -> float | None:
    """GPU busy time (kernels, copies, memsets; overlaps once) per call from ``torch.profiler``; None off CUDA
    or when the profiler cannot see the GPU (no CUPTI). The GPU lane's copies of ``record_function``
    labels are not work: counting them counted a labelled step's kernels twice."""
    if device.type != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile

    with _on_device(device), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. CUPTI notices: they cannot change the measurement
        torch.cuda.synchronize(device)
        # no acc_events=True: it would turn every event into a Python object at exit (seconds for a
        # call of thousands of launches); only kineto's raw events are read
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            torch.cuda.synchronize(device)
        events = list(prof.profiler.kineto_results.events())
    spans = [(e.start_ns(), e.end_ns()) for e in events if trace.kineto_gpu_work(e)]
    return trace.busy_ns(spans) / 1e9 / calls if spans else None


def one_call(fn: Callable[[], object], device: torch.device | str = "cpu") -> float:
    """Seconds of ONE call, the device drained before and after: for a first call (compiling,
    autotuning, a shape never seen), which a median of many calls cannot time. Not a benchmark."""
    synchronize(device)
    start = time.perf_counter()
    fn()
    synchronize(device)
    return time.perf_counter() - start


def measure(fn: Callable[[], object], label: str = "fn", *, device: torch.device | str = "cpu",
            memory: bool = False) -> Timing:
    """Time one zero-argument function; optionally also its peak memory."""
    return _measure_interleaved([(label, fn, {})], torch.device(device), memory)[0]


RUNS_ON = "runs on"  # the table column of a comparison whose variants run on different devices


def placement(labels: list[str], device: torch.device | str = "cpu", devices: dict | None = None,
              host: bool = False) -> tuple[torch.device, list[torch.device]]:
    """The comparison's device and each variant's. ``devices`` maps a label to the device that
    variant runs on (the others run on ``device``); ``host=True`` puts every variant on the CPU. A
    comparison with a variant on a GPU is that GPU's comparison, whatever ``device`` says: its
    record, caption and claims are about the GPU, and each record keeps its variant's own device."""
    devices = dict(devices or {})
    unknown = sorted(set(devices) - set(labels))
    if unknown:
        raise ValueError(f"devices names no variant: {unknown}; the variants are {labels}")
    if host:
        elsewhere = {label: str(d) for label, d in devices.items() if torch.device(d).type != "cpu"}
        if elsewhere:
            raise ValueError(f"host=True runs every variant on the CPU, but devices puts {elsewhere} elsewhere: "
                             "drop host=True and pass device= (or devices=) instead")
        device = "cpu"
    device = torch.device(device)
    rows = [torch.device(devices.get(label, device)) for label in labels]
    if device.type == "cpu":
        device = next((d for d in rows if d.type != "cpu"), device)
    return device, rows


def _measure_interleaved(variants, device: torch.device, memory: bool,
                         row_devices: list[torch.device] | None = None,
                         ahead: list[int] | None = None) -> list[Timing]:
    """Time the variants in interleaved rounds. ``row_devices``: each variant's device (default:
    ``device`` for all); a variant on the CPU gets no GPU time, and when the variants run on
    different devices their peak memory is not measured (a CUDA allocator's peak and a CPU's are
    not the same quantity) and each row says where it ran. ``ahead``: how many calls' worth of
    work each variant prepares in the background (``compare``'s ``ahead``; default 0)."""
    from torch.utils import benchmark

    row_devices = row_devices or [device] * len(variants)
    ahead = ahead or [0] * len(variants)
    mixed = len(set(row_devices)) > 1
    memory = memory and not mixed
    with _on_device(device):
        timers = [_timer(fn, label, on) for (label, fn, _), on in zip(variants, row_devices)]
        for _, fn, _ in variants:  # warm-up: first calls pay for lazy init, caches, autotuning
            fn()
        budget = _settings["min_run_time"]
        numbers = []
        for (_, fn, _), timer, n in zip(variants, timers, ahead):
            _drain(fn, n)   # a full buffer would make one call look faster than the steady state
            # workers that start together finish together: a block of `ahead` calls spans their bursts
            numbers.append(max(_block_size(timer, budget), n))
        rounds: list[list[list[benchmark.Measurement]]] = [[] for _ in variants]
        for _ in range(_settings["rounds"]):  # interleaved: baseline, tip, baseline, tip, ...
            for i, timer in enumerate(timers):
                _drain(variants[i][1], ahead[i])
                rounds[i].append(_run_round(timer, numbers[i], budget))
                _refill(rounds[i][-1], ahead[i])
        timings = []
        gpu_seconds = [gpu_seconds_per_call(fn, on, calls=_profiled_calls(measured))
                       for (_, fn, _), measured, on in zip(variants, rounds, row_devices)]
        if any(s is not None for s in gpu_seconds):  # the profiler sees the GPU: no kernel means none ran
            gpu_seconds = [(s or 0.0) if on.type == "cuda" else None for s, on in zip(gpu_seconds, row_devices)]
        for (label, fn, extra), measured, gpu_s, on in zip(variants, rounds, gpu_seconds, row_devices):
            m = benchmark.Measurement.merge([block for one_round in measured for block in one_round])[0]
            q1, q3 = torch.tensor(m.times, dtype=torch.float64).quantile(
                torch.tensor([0.25, 0.75], dtype=torch.float64)).tolist()  # as Timer computes its IQR
            per_round = [benchmark.Measurement.merge(one_round)[0].median for one_round in measured]
            peak, method = peak_memory(fn, on) if memory else (None, None)
            extra = {RUNS_ON: str(on), **extra} if mixed else dict(extra)
            timings.append(Timing(label, m.median, m.iqr, len(m.times), peak, method, extra, per_round, gpu_s,
                                  q1, q3, device_merged=gpu_s is not None))
    return timings


def _profiled_calls(rounds: list[list[benchmark.Measurement]]) -> int:
    """How many calls the profiler sees: one for a long call (its GPU time is far above any launch
    jitter), PROFILED_CALLS otherwise."""
    from torch.utils import benchmark

    first = benchmark.Measurement.merge(rounds[0])[0].median
    return 1 if first >= LONG_CALL_S else PROFILED_CALLS


def _normalize(variant) -> tuple[str, Callable[[], object], dict]:
    if not isinstance(variant, tuple) or len(variant) not in (2, 3) or not isinstance(variant[0], str):
        raise TypeError(f"each variant must be (label, fn) or (label, fn, extra_dict), got {variant!r}")
    label, fn, *rest = variant
    extra = rest[0] if rest else {}
    if not isinstance(extra, dict):
        raise TypeError(f"{label!r}: extra must be a dict, got {type(extra).__name__}")
    return label, fn, extra


def compare(tip: str, baseline, *variants, title: str = "", sizes: dict | None = None,
            device: torch.device | str = "cpu", memory: bool = True, record: bool = True,
            about_overhead: bool = False, host: bool = False, why: str = "", headline: str = "",
            facts: dict | None = None, needs: str | None = None, rate: tuple | None = None,
            devices: dict | None = None, ahead: dict | None = None, metric: str = "") -> Result | Unmeasured:
    """Measure a baseline and the tip's variant(s) side by side; record and return the result.

    Each of ``baseline`` and ``variants`` is ``(label, fn)`` or ``(label, fn, extra)`` where
    ``fn`` takes no arguments and ``extra`` holds other figures for the table (e.g. a
    parameter count). ``sizes`` is a dict, or a ``Sizes`` from ``bench.sizes`` (then a
    reference run is shown only if it used the sizes this notebook picks for its device).
    ``about_overhead=True`` marks a tip whose point is host-side overhead (sync points, launches).
    ``host=True`` marks a host-side comparison (it runs on the CPU whatever the notebook's device).
    ``devices`` maps a variant's label to the device it runs on when that is not ``device`` (a CPU
    baseline beside GPU variants: ``devices={"CPU, all threads": "cpu"}``). A comparison with a
    variant on a GPU is recorded as that GPU's; each record also keeps its variant's own device.
    Variants on different devices get a "runs on" column, no GPU time on the CPU, and no peak memory.
    ``ahead`` maps a variant's label to how many calls' worth of work it prepares in the background
    (an endless DataLoader's ``num_workers * prefetch_factor`` batches). Interleaved with the others,
    such a variant would refill while they run, and then serve its short rounds from the buffer: it
    would look faster than its steady state, and its workers would slow the next variant down. So
    that many untimed calls empty the buffer before each of its rounds, each timed block spans at
    least that many calls (workers started together hand over their batches in bursts: one call
    waits, the next ones find a batch ready), and after each round the measurement waits while the
    buffer refills.
    ``why`` names the comparison's explanations in ``utils/why`` (default: the tip), ``headline``
    the variant the card's headline is about (default: the first after the baseline), and
    ``facts`` further figures those explanations may quote. ``rate=(unit, work)`` adds each variant's
    throughput, ``work / median`` in ``unit`` (``("GB/s", nbytes / 1e9)``), to its row and as the
    facts ``baseline_rate`` and ``variant_rate``. ``needs="cuda"`` (or ``"gpu"``: CUDA or
    MPS) marks a demo other devices cannot run: there nothing is timed, and the card says what the
    demo would measure and shows the reference runs that did. The result shows as a card in Jupyter.
    """
    if not isinstance(tip, str) or not tip:
        raise ValueError("tip must be a curriculum ID such as 'T044'")
    if not variants:
        raise ValueError("compare() needs a baseline and at least one variant")
    parsed = [_normalize(v) for v in (baseline, *variants)]
    labels = [label for label, _, _ in parsed]
    if len(set(labels)) != len(labels):
        raise ValueError(f"variant labels must be distinct, got {labels}")
    if rate is not None and (len(rate) != 2 or not isinstance(rate[0], str) or not isinstance(rate[1], numbers.Real)):
        raise TypeError(f"rate must be (unit, work per call), e.g. ('GB/s', 0.27); got {rate!r}")
    if headline and headline not in labels[1:]:
        raise ValueError(f"headline must name a variant after the baseline, one of {labels[1:]}; got {headline!r}")
    _check_metric(metric, parsed, memory, rate)
    device, row_devices = placement(labels, device, devices, host)
    prepared = _ahead(labels, ahead)
    if needs is not None and not _satisfies(device, needs):
        demo = Demo(tip, title or tip, labels, dict(sizes or {}), getattr(sizes, "spec", None))
        return Unmeasured(demo, device_name(device), _kind(device), needs, why, dict(facts or {}), headline or labels[1])
    result = Result(tip, title or tip, str(device), device_name(device), dict(sizes or {}),
                    _measure_interleaved(parsed, device, memory, row_devices, prepared), about_overhead=about_overhead, host=host,
                    sizes_spec=getattr(sizes, "spec", None), quick=is_quick(),
                    notebook=os.environ.get("COURSE_NOTEBOOK", ""), why=why, headline_variant=headline,
                    torch=torch.__version__, facts={k: fact_text(v) for k, v in (facts or {}).items()},
                    metric="" if metric == "time" else metric)
    if rate is not None:
        _add_rate(result, *rate)
    if record:
        written = result.to_records({row.label: result.verdict(row).kind for row in result.rows})
        for entry, on in zip(written, row_devices):   # to_records writes the rows in order
            entry.variant_device, entry.variant_device_name = str(on), device_name(on)
        records.append(written)
        result.records = written   # the card carries them into the notebook too
    present.remember(result)
    return result


def _check_metric(metric: str, parsed: list, memory: bool, rate: tuple | None) -> None:
    """A metric the comparison can show: time, peak memory (measured), or a figure every variant gives."""
    if metric in ("", "time"):
        return
    if metric == "memory":
        if not memory:
            raise ValueError("metric='memory' needs the peak memory: drop memory=False")
        return
    missing = [label for label, _, extra in parsed if metric not in extra and not (rate and rate[0] == metric)]
    if missing:
        raise ValueError(f"metric={metric!r} is neither 'time' nor 'memory', and the variants {missing} give no "
                         f"such figure in their extra dict")


def _ahead(labels: list[str], ahead: dict | None) -> list[int]:
    """Each variant's ``ahead`` count, in the order of ``labels``."""
    ahead = dict(ahead or {})
    unknown = sorted(set(ahead) - set(labels))
    if unknown:
        raise ValueError(f"ahead names no variant: {unknown}; the variants are {labels}")
    for label, calls in ahead.items():
        if not isinstance(calls, int) or isinstance(calls, bool) or calls < 0:
            raise ValueError(f"ahead[{label!r}] must be a number of calls (an int >= 0), got {calls!r}")
    return [ahead.get(label, 0) for label in labels]


def _add_rate(result: Result, unit: str, work: float) -> None:
    for row in result.rows:
        row.extra[unit] = format_number(work / row.median)
    result.facts.setdefault("baseline_rate", f"{result.baseline.extra[unit]} {unit}")
    result.facts.setdefault("variant_rate", f"{result.featured().extra[unit]} {unit}")


def _satisfies(device: torch.device, needs: str) -> bool:
    if needs not in NEEDS:
        raise ValueError(f"needs must be one of {sorted(NEEDS)}, got {needs!r}")
    return device.type == "cuda" if needs == "cuda" else device.type in ("cuda", "mps")


def _kind(device: torch.device) -> str:
    return "gpu" if device.type in ("cuda", "mps") else "cpu"


def sweep(tip: str, over: str, values, variants: Callable[[object], list], *, title: str,
          device: torch.device | str = "cpu", sizes: dict | None = None, rate: tuple | None = None,
          record: bool = True, memory: bool = False, needs: str | None = None,
          **options) -> SweepResult | Unmeasured:
    """The same comparison at several sizes: ``variants(value)`` returns the ``(label, fn)`` pairs
    (baseline first) to compare at one value of ``over``. ``sizes`` are the sizes that stay fixed.
    ``rate=(unit, work)`` plots ``work(value) / seconds`` in ``unit`` instead of time (say
    ``("GB/s", lambda n: 4 * n / 1e9)``). ``needs`` as for ``compare``; other options go to
    ``compare`` for every value."""
    values = list(values)
    if len(values) < 2:
        raise ValueError(f"a sweep needs at least two values of {over!r}, got {values!r}")
    if rate is not None and (len(rate) != 2 or not isinstance(rate[0], str) or not callable(rate[1])):
        raise TypeError(f"rate must be (unit, work), e.g. ('GB/s', lambda n: 4 * n / 1e9); got {rate!r}")
    named = options.get("devices") or {}   # a sweep whose variants put one on a GPU is that GPU's
    device = placement(list(named), device, named, options.get("host", False))[0]
    if needs is not None and not _satisfies(device, needs):
        demo = Demo(tip, title, [], {**dict(sizes or {}), over: values})
        return Unmeasured(demo, device_name(device), _kind(device), needs, options.get("why", ""),
                          dict(options.get("facts") or {}))
    comparisons = [compare(tip, *variants(value), title=title, sizes={**dict(sizes or {}), over: value},
                           device=device, record=record, memory=memory,
                           rate=(rate[0], rate[1](value)) if rate else None, **options) for value in values]
    return SweepResult(tip, title, over, values, comparisons, Rate(*rate) if rate else None)


def timeline(tip: str, *variants, title: str, device: torch.device | str = "cpu", why: str = "",
             needs: str | None = None) -> TimelineResult | Unmeasured:
    """What the CPU and the GPU ran during one call of each ``(label, fn)`` variant (after one
    warm-up call), from ``torch.profiler``: a picture of waiting and overlap, not a timing."""
    device = torch.device(device)
    if needs is not None and not _satisfies(device, needs):
        return Unmeasured(Demo(tip, title, [], {}), device_name(device), _kind(device), needs, why)
    spans = [span for label, fn, _ in map(_normalize, variants) for span in trace.spans(label, fn, device)]
    return TimelineResult(tip, title, device_name(device), spans)
