"""The scale options every `score`/`evaluate` task takes (`--chunk-size`, `--workers`, `--engine
spark`, `--spark-master`, `--spark-partitions`): adding them to a parser, choosing the engine they
ask for, and the Spark session they name."""

from __future__ import annotations

import argparse

__all__ = ["add_scale_arguments", "check_chunk_size", "check_local_inputs", "scale_engine"]


def add_scale_arguments(p: argparse.ArgumentParser) -> None:
    """--chunk-size / --workers / --engine / --spark-master (docs/scale.md)."""
    g = p.add_argument_group("scale (documentation: Scale: chunks, workers and Spark)")
    g.add_argument("--chunk-size", type=int, metavar="N",
                   help="stream the files N records at a time in bounded memory (wide CSV/TSV/JSONL/Parquet files sorted by id)")
    g.add_argument("--workers", type=int, default=1, metavar="N",
                   help="score chunks in N processes (implies --chunk-size 100000 unless given)")
    g.add_argument("--engine", choices=("local", "spark"), default="local",
                   help="local (default) or spark: score on a Spark cluster (pip install 'extracteval[spark]')")
    g.add_argument("--spark-master", metavar="URL", help="Spark master for --engine spark (default: the session's, or local[*])")
    g.add_argument("--spark-partitions", type=int, metavar="N", help="repartition the joined data into N partitions (--engine spark)")


def check_chunk_size(chunk_size: int, unit: str = "records") -> None:
    """Refuse a --chunk-size that is not a positive number of `unit` (records, sentences)."""
    if chunk_size < 1:
        from extracteval.errors import InputError

        raise InputError(f"Expected --chunk-size to be a positive number of {unit}, but got {chunk_size}.")


def scale_engine(args: argparse.Namespace, unit: str = "records") -> str:
    """Which engine the scale options ask for: "memory", "chunked" (--chunk-size / --workers) or
    "spark" (--engine spark), with the options checked together (each one's error names it;
    `unit`: what --chunk-size counts)."""
    from extracteval.errors import InputError

    chunk_size, workers = getattr(args, "chunk_size", None), getattr(args, "workers", 1)
    spark_only = [opt for opt, on in (("--spark-master", getattr(args, "spark_master", None) is not None),
                                      ("--spark-partitions", getattr(args, "spark_partitions", None) is not None)) if on]
    if workers < 1:
        raise InputError(f"Expected --workers to be ≥ 1, but got {workers}.")
    if chunk_size is not None and chunk_size < 1:
        raise InputError(f"Expected --chunk-size to be a positive number of {unit}, but got {chunk_size}.")
    if getattr(args, "engine", "local") == "spark":
        if chunk_size is not None or workers != 1:
            raise InputError("--chunk-size/--workers are for the local engine; with --engine spark use --spark-partitions N.")
        return "spark"
    if spark_only:
        raise InputError(f"{', '.join(spark_only)} go with --engine spark; add it, or drop them.")
    return "chunked" if chunk_size is not None or workers > 1 else "memory"


def check_local_inputs(args: argparse.Namespace) -> None:
    """Every local file of `--truth` and `--predictions [NAME=]FILE` exists (a cluster URI,
    `scheme://…`, is the engine's to read): else the `InputError` that names it."""
    from pathlib import Path

    from extracteval.io.config import parse_model_spec
    from extracteval.io.text_files import read_error

    truth = getattr(args, "truth", None)
    paths = [str(t) for t in (truth if isinstance(truth, (list, tuple)) else [truth]) if t]
    paths += [str(parse_model_spec(str(spec))[1]) for spec in getattr(args, "predictions", None) or []]
    for p in paths:
        if "://" not in p and not Path(p).exists():
            raise read_error(Path(p), FileNotFoundError())
