"""The one check every streaming (`--chunk-size`) reader makes of record ids: strictly ascending
in byte order, so that files can be merge-joined chunk by chunk without holding them."""

from __future__ import annotations

from pathlib import Path

from extracteval.core.id_order import first_by_id, natural_ids, natural_key, natural_sorted  # noqa: F401 - the readers' order
from extracteval.errors import InputError

__all__ = ["check_id_order", "natural_key", "natural_sorted"]


def check_id_order(path: Path | str, where: str, rid: str, prev: str | None, prev_where: str | None = None, *, noun: str = "record id") -> None:
    """Raise the InputError for `rid` (at `where`) not strictly after `prev` (at `prev_where`)."""
    if prev is None or rid > prev:
        return
    kind = "duplicated" if rid == prev else "out of order"
    after = f"{prev!r} at {prev_where}" if prev_where else repr(prev)
    raise InputError(
        f"{path}: {where}: {noun} {rid!r} is {kind} (it follows {after}); --chunk-size needs every file sorted by id, "
        "ascending and unique (byte order, as `LC_ALL=C sort`). Sort the files, or drop --chunk-size."
    )


