"""The `spans` task on the chunk driver: which chunks `score spans --chunk-size N` reads (JSONL
documents sorted by id, or token files a number of sentences at a time) and the task object that
scores them (`semantics.SpansTask`, the task's count and reduction)."""

from __future__ import annotations

from typing import Any

__all__ = ["spans_chunk_job"]


def spans_chunk_job(args: Any, *, chunk_size: int) -> Any:
    """The `ChunkJob` of `score spans` / `evaluate spans --chunk-size N` (`args`: their parsed
    options): JSONL documents sorted by id, N at a time, or token files N sentences at a time
    (`tasks.spans.chunks.iter_token_chunks`); `inputs` as the in-memory evaluation names them."""
    from extracteval.chunked import ChunkJob
    from extracteval.tasks.spans.ledger import SpansTask
    from extracteval.tasks.spans.chunks import iter_token_chunks, open_spans_stream
    from extracteval.tasks.spans.options import check_token_inputs, named_files, build_config, spans_inputs

    token_files = check_token_inputs(args)
    if token_files:
        files = {"conll": token_files} if args.conll else {"truth": args.truth, "predictions": token_files}
        chunks: Any = iter_token_chunks(scheme=args.scheme, suffix=args.suffix, chunk_size=chunk_size, **files)
        config = build_config(args, "token")
    else:
        chunks = open_spans_stream(args.truth, named_files(args.predictions or [], "--predictions"), chunk_size=chunk_size).chunks()
        config = build_config(args, "char")
    return ChunkJob(task=SpansTask(config=config), chunks=chunks, inputs=spans_inputs(args))
