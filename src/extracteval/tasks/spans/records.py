"""The `spans` task's per-document counts as `records.parquet` holds them, in memory and streamed.

`records.parquet` has one row per model, matching mode, document and tag (tp, fp, fn), zeros
included: every document is a resampling unit of the intervals, and every tag of the whole
evaluation appears for it. A chunk knows only its own tags, and the rows come mode by mode, so a
streaming engine writes each chunk's counts in a compact layout first (`chunk_rows`: per
document a marker row, then its non-zero counts) and `expand_chunk_rows` rewrites that file, in
bounded memory, into the rows the in-memory evaluation writes (`count_frame`), once the tags
are known.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["COUNTS", "count_frame", "chunk_rows", "expand_chunk_rows"]

COUNTS = ("tp", "fp", "fn")
_BATCH = 1 << 16  # compact rows read at a time


def count_frame(model: str, doc_ids: Sequence[str], tags: Sequence[str], mode: str, counts: np.ndarray) -> pd.DataFrame:
    """model, record_id, mode, tag, tp, fp, fn of one model and mode: `counts` (documents, tags,
    3), documents then tags, ids and names dictionary-encoded."""
    n, t = len(doc_ids), len(tags)
    return pd.DataFrame({
        "model": pd.Categorical.from_codes(np.zeros(n * t, dtype=np.int32), categories=pd.Index([model], dtype=object)),
        "record_id": pd.Categorical.from_codes(np.repeat(np.arange(n, dtype=np.int32), t), categories=pd.Index(list(doc_ids), dtype=object)),
        "mode": pd.Categorical.from_codes(np.zeros(n * t, dtype=np.int32), categories=pd.Index([mode], dtype=object)),
        "tag": pd.Categorical.from_codes(np.tile(np.arange(t, dtype=np.int32), n), categories=pd.Index(list(tags), dtype=object)),
        **{k: counts[:, :, i].reshape(n * t).astype(np.int32) for i, k in enumerate(COUNTS)},
    })


def chunk_rows(doc_ids: Sequence[str], tags: Sequence[str], counts: dict[str, np.ndarray]) -> pd.DataFrame:
    """A chunk's counts of one model (`{mode: (documents, tags, 3)}`) in the compact layout:
    per document, in order, a marker row (mode and tag null, zeros), then its non-zero counts."""
    modes = list(counts)
    n = len(doc_ids)
    stacked = np.stack([counts[m] for m in modes], axis=1) if modes else np.zeros((n, 0, len(tags), 3), dtype=np.int64)
    d, m, t = np.nonzero(stacked.any(axis=3))
    doc = np.concatenate([np.arange(n), d])
    marker = np.concatenate([np.ones(n, dtype=bool), np.zeros(len(d), dtype=bool)])
    order = np.lexsort((~marker, doc))  # stable: a document's marker, then its counts in (mode, tag) order
    mode_names = np.asarray([*modes, None], dtype=object)
    tag_names = np.asarray([*tags, None], dtype=object)
    values = np.concatenate([np.zeros((n, 3), dtype=np.int64), stacked[d, m, t]])[order]
    return pd.DataFrame({
        "record_id": pd.array(np.asarray(doc_ids, dtype=object)[doc[order]], dtype="string[pyarrow]"),
        "mode": pd.array(mode_names[np.concatenate([np.full(n, -1), m])[order]], dtype="string[pyarrow]"),
        "tag": pd.array(tag_names[np.concatenate([np.full(n, -1), t])[order]], dtype="string[pyarrow]"),
        **{k: values[:, i].astype(np.int32) for i, k in enumerate(COUNTS)},
    })


def _blocks(src: Path) -> Iterator[pd.DataFrame]:
    """The compact rows in pieces of whole documents (a document's rows may cross row groups)."""
    import pyarrow.parquet as pq

    carry: pd.DataFrame | None = None
    for batch in pq.ParquetFile(src).iter_batches(batch_size=_BATCH):
        frame = batch.to_pandas()
        if carry is not None:
            frame = pd.concat([carry, frame], ignore_index=True)
        last = int(np.flatnonzero(frame["mode"].isna().to_numpy())[-1])
        carry = frame.iloc[last:].reset_index(drop=True)
        if last:
            yield frame.iloc[:last].reset_index(drop=True)
    if carry is not None:
        yield carry


def expand_chunk_rows(src: Path, dst: Path, *, model: str, modes: Sequence[str], tags: Sequence[str]) -> None:
    """Rewrite the compact rows at `src` as `count_frame` rows of every mode (in `modes` order)
    and every tag (`tags`, the evaluation's) at `dst`; one pass over `src` per mode."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tag_index = pd.Index(list(tags), dtype=object)
    writer: Any = None
    schema: Any = None
    try:
        for mode in modes:
            for block in _blocks(src):
                marker = block["mode"].isna().to_numpy()
                doc = np.cumsum(marker) - 1
                sel = (block["mode"] == mode).fillna(False).to_numpy(dtype=bool)
                counts = np.zeros((int(marker.sum()), len(tags), 3), dtype=np.int64)
                counts[doc[sel], tag_index.get_indexer(block["tag"].to_numpy(dtype=object)[sel])] = block.loc[sel, list(COUNTS)].to_numpy()
                ids = block["record_id"].to_numpy(dtype=object)[marker]
                table = pa.Table.from_pandas(count_frame(model, ids, tags, mode, counts), preserve_index=False)
                if writer is None:
                    # dictionary indices wide enough for every block (a block's own may be narrower)
                    schema = pa.schema([f.with_type(pa.dictionary(pa.int32(), f.type.value_type)) if pa.types.is_dictionary(f.type) else f
                                        for f in table.schema], metadata=table.schema.metadata)
                    writer = pq.ParquetWriter(str(dst), schema)
                writer.write_table(table.cast(schema))
    finally:
        if writer is not None:
            writer.close()
