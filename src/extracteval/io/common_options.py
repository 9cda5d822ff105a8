"""Options several `score <task>` commands take alike, added to a parser in one place (importing
this module is cheap: `--help` loads no table library)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_slice_arguments", "slice_config_keys", "add_bootstrap_arguments", "add_normalization_arguments", "add_result_arguments",
           "add_similarity_arguments", "add_tracking_uri_argument"]


def add_normalization_arguments(p: argparse.ArgumentParser, *, null_meaning: str = "absent") -> None:
    """--null-tokens and --dayfirst: how values are read (`null_meaning`: the word the help
    uses for what a null token stands for)."""
    p.add_argument("--null-tokens", metavar="A,B", help=f'strings meaning "{null_meaning}" (default: not present,n/a,na,none,null,-)')
    p.add_argument("--dayfirst", action="store_true", help="read 01/02/2024 as 1 February")


def add_bootstrap_arguments(p: Any, *, resampled: str = "", defaults: bool = True) -> None:
    """--resamples and --seed of the bootstrap intervals (`resampled`: what is drawn, said in
    the help; `defaults`: whether the parser sets 1000 and 0 itself or leaves them to the
    configuration)."""
    p.add_argument("--resamples", type=int, default=1000 if defaults else None, metavar="N", help=f"bootstrap resamples{resampled} (default 1000)")
    p.add_argument("--seed", type=int, default=0 if defaults else None, metavar="N", help="bootstrap seed (default 0)")


_DELIMITER_NAMES = {"\\t": "\t", "tab": "\t", "TAB": "\t", "\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|", "space": " "}


def delimiter_argument(value: str) -> str:
    """`--delimiter`: one character; `\\t` typed literally (or `tab`) is a tab. Anything else is
    the command line's error (exit 2), before a file is read."""
    char = _DELIMITER_NAMES.get(value, value)
    if len(char) != 1 or char in "\"\r\n":
        raise argparse.ArgumentTypeError(f"expected one character (or \\t / tab for a tab), but found {value!r}")
    return char


def add_delimiter_argument(p: Any, *, default: str) -> None:
    p.add_argument("--delimiter", metavar="CHAR", type=delimiter_argument, help=f"CSV delimiter, one character; \\t or tab for a tab (default: {default})")


def experiment_name(value: str) -> str:
    """`--experiment`: a name with something in it (an empty one would log to a default
    experiment without a word) and no control character."""
    if not value.strip():
        raise argparse.ArgumentTypeError("expected an experiment name, but found an empty one")
    if not value.isprintable():
        raise argparse.ArgumentTypeError(f"expected an experiment name of printable characters, but found {value!r}")
    return value


def add_tracking_uri_argument(p: Any) -> None:
    """--tracking-uri of the commands that read or write an MLflow tracking store."""
    p.add_argument("--tracking-uri", metavar="URI", help="tracking store (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)")


def add_similarity_arguments(p: argparse.ArgumentParser) -> None:
    """--similarity and the options of its backends (a local embedding model, an LLM judge)."""
    p.add_argument("--similarity", metavar="NAME", help="backend of SEMANTIC fields: lexical (default), fuzzy, embedding, llm_judge")
    p.add_argument("--embedding-model", metavar="DIR", help="local sentence-transformers model folder for --similarity embedding (never downloads)")
    p.add_argument("--judge-base-url", metavar="URL", help="OpenAI-compatible endpoint for --similarity llm_judge (or EXTRACTEVAL_JUDGE_BASE_URL)")
    p.add_argument("--judge-model", metavar="NAME", help="judge model name (or EXTRACTEVAL_JUDGE_MODEL)")


def add_result_arguments(p: argparse.ArgumentParser, *, writes: str, safe_csv: bool = True) -> None:
    """The options about a command's result: --json, --output DIR (`writes` says what it writes
    there), --safe-csv when it writes CSV, and the scale options."""
    from extracteval.io.outputs import add_safe_csv_argument
    from extracteval.io.scale_options import add_scale_arguments

    p.add_argument("--json", action="store_true", help="print the result as one JSON document")
    p.add_argument("--output", metavar="DIR", help=f"write {writes} to DIR")
    if safe_csv:
        add_safe_csv_argument(p)
    add_scale_arguments(p)


def add_slice_arguments(p: argparse.ArgumentParser) -> None:
    """--slice-by, --cluster-by and their companions: every task's metrics broken down by a
    metadata column of the records, with intervals that resample whole clusters."""
    g = p.add_argument_group("slices and clusters")
    g.add_argument("--slice-by", dest="slice_by", action="append", default=[], metavar="COLUMN[,COLUMN]",
                   help="break every model's metrics down by this metadata column (repeatable; A,B crosses two columns; @size: "
                        "each record's size as the task counts it); a ground-truth column named here or by --cluster-by is "
                        "metadata, not scored (with --metadata FILE the ground truth is scored whole)")
    g.add_argument("--metadata", metavar="FILE", help="record metadata (CSV, TSV, Parquet or JSON Lines keyed by record id; "
                                                      "default: the ground-truth file's own columns)")
    g.add_argument("--metadata-id", metavar="NAME", help="record id column of --metadata (default: the task's record id column)")
    g.add_argument("--slice-bins", dest="slice_bins", action="append", default=[], metavar="N|COLUMN=E1,E2,…",
                   help="numeric columns: N quantile bins (default 4), or the bin edges of one column (repeatable)")
    g.add_argument("--slice-min-size", dest="slice_min_size", type=int, metavar="N", help="records a slice needs to be ranked (default 20)")
    g.add_argument("--cluster-by", dest="cluster_by", metavar="COLUMN",
                   help="records sharing this column's value are not independent (a customer, a source document): intervals "
                        "resample whole clusters")
    have = {o for a in p._actions for o in a.option_strings}
    if "--resamples" not in have:  # a task whose result has no intervals of its own: the slices' resamples and seed
        g.add_argument("--resamples", type=int, default=1000, metavar="N", help="bootstrap resamples of the slices' intervals (default 1000)")
    if "--seed" not in have:
        g.add_argument("--seed", type=int, default=0, metavar="N", help="bootstrap seed of the slices' intervals (default 0)")


def slice_config_keys() -> dict[str, str]:
    """evaluator_config / Python API keys of slicing, with what each means."""
    return {
        "slice_by": "metadata column(s) to break every metric down by: a name, 'a,b' for crossed columns, or a list of those; such a "
                    "column is read as metadata, never scored",
        "metadata": "record metadata keyed by record id: a CSV, TSV, Parquet or JSON Lines file, or a DataFrame (default: the "
                    "ground truth's own columns; for mlflow.models.evaluate, the data's columns)",
        "metadata_id": "record id column of `metadata` (default: the id column)",
        "slice_bins": "quantile bins of a numeric column (int), or {column: [edges]}",
        "slice_min_size": "records a slice needs to be ranked (default 20)",
        "cluster_by": "metadata column grouping records that are not independent: the intervals resample whole clusters",
    }
