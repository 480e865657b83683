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
import dataclasses
import functools
import inspect
import math
import numbers
import os
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, NamedTuple

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


@dataclass(frozen=True, kw_only=True)
class Options:
    """How ``compare`` measures, judges, records and shows a comparison (``sweep`` forwards them to
    ``compare`` at every value). Checks that need the variants' labels are ``compare``'s."""
    title: str = ""                 # the card's title (default: the tip)
    sizes: dict | None = None       # a dict, or a Sizes from bench.sizes: then a reference run is shown
                                    # only if it used the sizes this notebook picks for its device
    device: torch.device | str = "cpu"
    memory: bool = True             # also measure each variant's peak memory
    record: bool = True             # append the rows to the records file
    about_overhead: bool = False    # the tip's point is host-side overhead (sync points, launches)
    host: bool = False              # a host-side comparison: it runs on the CPU whatever ``device`` says
    why: str = ""                   # the key of its explanations in utils/why (default: the tip)
    headline: str = ""              # the variant the headline is about (default: the first after the baseline)
    facts: dict | None = None       # further figures those explanations may quote
    # "cuda" (or "gpu": CUDA or MPS): a demo other devices cannot run; there nothing is timed, and the
    # card says what the demo would measure and shows the reference runs that did
    needs: str | None = None
    # (unit, work per call): each variant's throughput, work / median in unit (("GB/s", nbytes / 1e9)),
    # in its row and as the facts baseline_rate and variant_rate
    rate: tuple | None = None
    # label -> the device that variant runs on when it is not ``device`` (a CPU baseline beside GPU
    # variants: {"CPU, all threads": "cpu"}). A comparison with a variant on a GPU is that GPU's; each
    # record keeps its variant's own device. Variants on different devices get a "runs on" column, no
    # GPU time on the CPU, and no peak memory.
    devices: dict | None = None
    # label -> how many calls' worth of work that variant prepares in the background (an endless
    # DataLoader's num_workers * prefetch_factor batches). Interleaved with the others it would refill
    # while they run and serve its rounds from the buffer, and its workers would slow the next variant:
    # so that many untimed calls empty the buffer before each of its rounds, each timed block spans at
    # least that many calls (workers started together hand over batches in bursts), and after each
    # round the measurement waits while the buffer refills.
    ahead: dict | None = None
    metric: str = ""                # what the tip is about: "time" (""), "memory", or a column of the rows

    def __post_init__(self):
        rate = self.rate
        if rate is not None and (len(rate) != 2 or not isinstance(rate[0], str)
                                 or not isinstance(rate[1], numbers.Real)):
            raise TypeError(f"rate must be (unit, work per call), e.g. ('GB/s', 0.27); got {rate!r}")
        _check_needs(self.needs)
        if self.metric == "memory" and not self.memory:
            raise ValueError("metric='memory' needs the peak memory: drop memory=False")
        for label, calls in (self.ahead or {}).items():
            if not isinstance(calls, int) or isinstance(calls, bool) or calls < 0:
                raise ValueError(f"ahead[{label!r}] must be a number of calls (an int >= 0), got {calls!r}")


def takes_options(fn: Callable) -> Callable:
    """``fn`` takes its settings as one ``options=Options(...)``: one of ``Options``' keywords passed to
    ``fn`` itself (the style before there was one), or options of another type, fail with a TypeError
    that says so."""
    own = set(inspect.signature(fn).parameters)
    fields = {f.name for f in dataclasses.fields(Options)}

    @functools.wraps(fn)
    def call(*args, **kwargs):
        moved = [name for name in kwargs if name in fields and name not in own]
        if moved:
            wanted = ", ".join(f"{name}=..." for name in moved)
            raise TypeError(f"{fn.__name__}() takes its options as one value: pass options=bench.Options({wanted})")
        if not isinstance(kwargs.get("options"), (Options, type(None))):
            raise TypeError(f"{fn.__name__}(): options must be a bench.Options, "
                            f"got {type(kwargs['options']).__name__}")
        return fn(*args, **kwargs)
    return call


class _Plan(NamedTuple):
    """What ``compare`` measures, once its arguments are checked."""
    variants: list[tuple[str, Callable[[], object], dict]]   # (label, fn, extra), baseline first
    device: torch.device                                      # the comparison's
    row_devices: list[torch.device]                           # each variant's
    ahead: list[int]                                          # each variant's ahead count

    @property
    def labels(self) -> list[str]:
        return [label for label, _, _ in self.variants]


@takes_options
def compare(tip: str, baseline, *variants, options: Options | None = None) -> Result | Unmeasured:
    """Measure a baseline and the tip's variant(s) side by side; record and return the result (it
    shows as a card in Jupyter). ``options``: an ``Options`` (default: ``Options()``).

    Each of ``baseline`` and ``variants`` is ``(label, fn)`` or ``(label, fn, extra)`` where
    ``fn`` takes no arguments and ``extra`` holds other figures for the table (e.g. a
    parameter count).
    """
    options = options or Options()
    plan = _plan(tip, (baseline, *variants), options)
    if options.needs is not None and not _satisfies(plan.device, options.needs):
        return _unmeasured(tip, plan, options)
    result = _measure(tip, plan, options)
    if options.record:
        _record(result, plan.row_devices)
    present.remember(result)
    return result


def _plan(tip: str, variants: tuple, options: Options) -> _Plan:
    """The checks that need the variants' labels; the variants parsed and placed on their devices."""
    if not isinstance(tip, str) or not tip:
        raise ValueError("tip must be a curriculum ID such as 'T044'")
    if len(variants) < 2:
        raise ValueError("compare() needs a baseline and at least one variant")
    parsed = [_normalize(v) for v in variants]
    labels = [label for label, _, _ in parsed]
    if len(set(labels)) != len(labels):
        raise ValueError(f"variant labels must be distinct, got {labels}")
    if options.headline and options.headline not in labels[1:]:
        raise ValueError(f"headline must name a variant after the baseline, one of {labels[1:]}; "
                         f"got {options.headline!r}")
    _check_metric(options.metric, parsed, options.rate)
    device, row_devices = placement(labels, options.device, options.devices, options.host)
    return _Plan(parsed, device, row_devices, _ahead(labels, options.ahead))


def _unmeasured(tip: str, plan: _Plan, options: Options) -> Unmeasured:
    """The card of a demo this device cannot run: what it would measure, nothing timed."""
    sizes = options.sizes
    demo = Demo(tip, options.title or tip, plan.labels, dict(sizes or {}), getattr(sizes, "spec", None))
    return Unmeasured(demo, device_name(plan.device), _kind(plan.device), options.needs, options.why,
                      dict(options.facts or {}), options.headline or plan.labels[1])


def _measure(tip: str, plan: _Plan, options: Options) -> Result:
    """Time the variants side by side: the result, with its rates."""
    sizes, device = options.sizes, plan.device
    result = Result(tip, options.title or tip, str(device), device_name(device), dict(sizes or {}),
                    _measure_interleaved(plan.variants, device, options.memory, plan.row_devices, plan.ahead),
                    about_overhead=options.about_overhead, host=options.host, sizes_spec=getattr(sizes, "spec", None),
                    quick=is_quick(), notebook=os.environ.get("COURSE_NOTEBOOK", ""), why=options.why,
                    headline_variant=options.headline, torch=torch.__version__,
                    facts={k: fact_text(v) for k, v in (options.facts or {}).items()},
                    metric="" if options.metric == "time" else options.metric)
    if options.rate is not None:
        _add_rate(result, *options.rate)
    return result


def _record(result: Result, row_devices: list[torch.device]) -> None:
    """Append the result's records, each with its variant's own device; the card carries them too."""
    written = result.to_records({row.label: result.verdict(row).kind for row in result.rows})
    for entry, on in zip(written, row_devices):   # to_records writes the rows in order
        entry.variant_device, entry.variant_device_name = str(on), device_name(on)
    records.append(written)
    result.records = written


def _check_metric(metric: str, parsed: list, rate: tuple | None) -> None:
    """A metric the comparison can show: time, peak memory (``Options`` checks it is measured), or a
    figure every variant gives."""
    if metric in ("", "time", "memory"):
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
    return [ahead.get(label, 0) for label in labels]


def _add_rate(result: Result, unit: str, work: float) -> None:
    for row in result.rows:
        row.extra[unit] = format_number(work / row.median)
    result.facts.setdefault("baseline_rate", f"{result.baseline.extra[unit]} {unit}")
    result.facts.setdefault("variant_rate", f"{result.featured().extra[unit]} {unit}")


def _check_needs(needs: str | None) -> None:
    if needs is not None and needs not in NEEDS:
        raise ValueError(f"needs must be one of {sorted(NEEDS)}, got {needs!r}")


def _satisfies(device: torch.device, needs: str) -> bool:
    return device.type == "cuda" if needs == "cuda" else device.type in ("cuda", "mps")


def _kind(device: torch.device) -> str:
    return "gpu" if device.type in ("cuda", "mps") else "cpu"


@takes_options
def sweep(tip: str, over: str, values, variants: Callable[[object], list], *, rate: tuple | None = None,
          options: Options | None = None) -> SweepResult | Unmeasured:
    """The same comparison at several sizes: ``variants(value)`` returns the ``(label, fn)`` pairs
    (baseline first) to compare at one value of ``over``. ``options`` go to ``compare`` for every
    value; they need a title, their ``sizes`` are the sizes that stay fixed, and a sweep measures no
    peak memory (it plots time). ``rate=(unit, work)`` plots ``work(value) / seconds`` in ``unit``
    instead (say ``("GB/s", lambda n: 4 * n / 1e9)``)."""
    options = options or Options()
    values = list(values)
    if len(values) < 2:
        raise ValueError(f"a sweep needs at least two values of {over!r}, got {values!r}")
    if rate is not None and (len(rate) != 2 or not isinstance(rate[0], str) or not callable(rate[1])):
        raise TypeError(f"rate must be (unit, work), e.g. ('GB/s', lambda n: 4 * n / 1e9); got {rate!r}")
    if not options.title:
        raise ValueError("a sweep needs a title: options=bench.Options(title=...)")
    if options.rate is not None:
        raise ValueError("a sweep's work depends on the value: pass sweep(..., rate=(unit, work)), "
                         "not Options(rate=...)")
    named = options.devices or {}   # a sweep whose variants put one on a GPU is that GPU's
    device = placement(list(named), options.device, named, options.host)[0]
    fixed = dict(options.sizes or {})
    if options.needs is not None and not _satisfies(device, options.needs):
        demo = Demo(tip, options.title, [], {**fixed, over: values})
        return Unmeasured(demo, device_name(device), _kind(device), options.needs, options.why,
                          dict(options.facts or {}))
    comparisons = [compare(tip, *variants(value), options=dataclasses.replace(
                       options, sizes={**fixed, over: value}, device=device, memory=False,
                       rate=(rate[0], rate[1](value)) if rate else None)) for value in values]
    return SweepResult(tip, options.title, over, values, comparisons, Rate(*rate) if rate else None)


def timeline(tip: str, *variants, title: str, device: torch.device | str = "cpu", why: str = "",
             needs: str | None = None) -> TimelineResult | Unmeasured:
    """What the CPU and the GPU ran during one call of each ``(label, fn)`` variant (after one
    warm-up call), from ``torch.profiler``: a picture of waiting and overlap, not a timing."""
    device = torch.device(device)
    _check_needs(needs)
    if needs is not None and not _satisfies(device, needs):
        return Unmeasured(Demo(tip, title, [], {}), device_name(device), _kind(device), needs, why)
    spans = [span for label, fn, _ in map(_normalize, variants) for span in trace.spans(label, fn, device)]
    return TimelineResult(tip, title, device_name(device), spans)
