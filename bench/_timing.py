"""Timing shared by the benchmarks that set extracteval against a peer in the same run.

A single timed call on a shared machine moves by ±20% from one run to the next (other jobs, the
memory bandwidth they take), and a ratio of two single calls by up to twice that. So each side is
timed `repeats` times, the sides taking turns (the order swapped every round, so neither always
runs first), each call on inputs made afresh (untimed: a second call on the same objects would
find their string hashes already computed) and after a full garbage collection (untimed: the
collection owed by earlier objects is not paid by whichever call allocates first). Each side keeps
its least CPU time, the usual estimate of what the code costs when nothing else intervenes.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

REPEATS = 3


@dataclass
class Timing:
    """The fastest of a side's calls: its CPU and wall seconds, the CPU seconds the garbage collector
    took inside it, every call's CPU seconds, and the result of the first call."""

    cpu: float
    wall: float
    gc_cpu: float
    cpus: list[float]
    result: Any


class _GcClock:
    def __init__(self) -> None:
        self.start = self.total = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.start = time.process_time()
        else:
            self.total += time.process_time() - self.start


def timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float, float, float]:
    """(result, wall s, CPU s, the collector's CPU s inside) of one call, after a full collection."""
    gc.collect()
    clock = _GcClock()
    gc.callbacks.append(clock)
    try:
        w, c = time.perf_counter(), time.process_time()
        res = fn(*args)
        wall, cpu = time.perf_counter() - w, time.process_time() - c
    finally:
        gc.callbacks.remove(clock)
    return res, wall, cpu, clock.total


def best_of(sides: Sequence[tuple[Callable[[], tuple[Any, ...]], Callable[..., Any]]], repeats: int = REPEATS) -> list[Timing]:
    """Time each side, given as (make its arguments, the call), `repeats` times in turns; the
    fastest call of each (see the module's docstring)."""
    out: list[Timing | None] = [None] * len(sides)
    for r in range(repeats):
        order = range(len(sides)) if r % 2 == 0 else range(len(sides) - 1, -1, -1)
        for i in order:
            make, fn = sides[i]
            args = make()
            res, wall, cpu, gc_cpu = timed(fn, *args)
            del args
            best = out[i]
            if best is None:
                out[i] = Timing(cpu=cpu, wall=wall, gc_cpu=gc_cpu, cpus=[cpu], result=res)
                continue
            best.cpus.append(cpu)
            if cpu < best.cpu:
                best.cpu, best.wall, best.gc_cpu = cpu, wall, gc_cpu
            del res
    return [t for t in out if t is not None]


def spread(t: Timing) -> str:
    """The CPU seconds of every call, for the reader to see how much they moved."""
    return "/".join(f"{c:.2f}" for c in t.cpus)


def peak_traced_mib(fn: Callable[..., Any], *args: Any) -> float:
    """The most memory Python allocated at once during `fn(*args)`, in MiB (tracemalloc: slower,
    so never inside a timed call)."""
    gc.collect()
    tracemalloc.start()
    try:
        fn(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20
