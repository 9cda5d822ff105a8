"""The CSV/TSV reader reads with Arrow's reader when the text is a plain rectangle, with pandas'
otherwise: both give the same frame for every text both read (cells as written, '' for an empty
cell, JSON-list cells as lists), whatever the quoting, line endings, delimiters and characters."""

from __future__ import annotations

import csv
import io

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.io import tables

CELL = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12),
    st.sampled_from(["", " ", "N/A", "null", "nan", '["A", "B"]', "[1, 2]", "[not json", '"quoted"', "a,b", "a\tb", "line\nbreak",
                     "é 名", "-0", "1e5", "  padded  "]),
)


def _pandas(text: str, delim: str) -> pd.DataFrame:
    """The reader's pandas path (what every irregular file takes)."""
    frame = pd.read_csv(io.StringIO(text), sep=delim, dtype=object, keep_default_na=False, na_filter=False, engine="c")
    values = frame.to_numpy(dtype=object)
    for j in range(values.shape[1]):
        starts = tables.text_starts(values[:, j], "[")
        if starts.any():
            values[:, j] = tables.json_list_text(values[:, j], starts)
    return pd.DataFrame(values, columns=frame.columns, dtype=object)


@settings(max_examples=300, deadline=None)
@given(
    header=st.lists(st.text(alphabet="abcdefgh_ é", min_size=1, max_size=6).filter(str.strip), min_size=1, max_size=5, unique=True),
    rows=st.lists(st.lists(CELL, min_size=5, max_size=5), min_size=1, max_size=8),
    delim=st.sampled_from([",", "\t", ";"]),
    ending=st.sampled_from(["\n", "\r\n", "\r"]),
    quoting=st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC]),
)
def test_arrow_and_pandas_read_a_csv_alike(header: list[str], rows: list[list[str]], delim: str, ending: str, quoting: int) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delim, lineterminator=ending, quoting=quoting)
    writer.writerow(header)
    writer.writerows([r[: len(header)] for r in rows])
    text = buf.getvalue()
    fast = tables._arrow_csv(text, delim)
    if fast is None:  # not a plain rectangle for Arrow: pandas reads it
        return
    want = _pandas(text, delim)
    assert list(fast.columns) == list(want.columns)
    assert fast.shape == want.shape
    assert fast.to_numpy(dtype=object).tolist() == want.to_numpy(dtype=object).tolist()


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.lists(st.sampled_from(["x", "1", "", '"q"', '"open', 'a"b', '""', '"a,b"', "z"]), min_size=2, max_size=2),
                   min_size=1, max_size=6),
    cut=st.integers(min_value=0, max_value=8),
)
def test_hand_written_quoting_is_read_or_refused_as_pandas_does(lines: list[list[str]], cut: int) -> None:
    """Text no CSV writer makes — a quote left open, a quote inside a field, a file cut short —
    is read by the fast path only when pandas reads it to the same frame."""
    text = "id,a\n" + "".join(",".join(r) + "\n" for r in lines)
    text = text[: max(len("id,a\n") + 1, len(text) - cut)]
    fast = tables._arrow_csv(text, ",")
    if fast is None:
        return
    want = _pandas(text, ",")  # a file pandas refuses must not reach here
    assert fast.to_numpy(dtype=object).tolist() == want.to_numpy(dtype=object).tolist()


def test_the_fast_path_is_taken_for_a_plain_table() -> None:
    assert tables._arrow_csv('id,a\n1,"x, y"\n2,\n', ",") is not None
    assert tables._arrow_csv("id,a\n1,x,extra\n", ",") is None  # ragged: pandas' reader and its message
    assert tables._arrow_csv("id,id\n1,2\n", ",") is None  # repeated name: refused by the reader's check
    assert tables._arrow_csv('id,a\n1,x\n2,"z\n3,w\n', ",") is None  # a quote left open: pandas refuses the file


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.one_of(st.none(), CELL), min_size=1, max_size=40), repeat=st.integers(1, 80), chunks=st.integers(1, 3))
def test_arrow_texts_are_the_columns_texts_with_equal_texts_shared(texts: list[str | None], repeat: int, chunks: int) -> None:
    import pyarrow as pa

    from extracteval.io.memory import arrow_texts

    cells = texts * repeat
    step = -(-len(cells) // chunks)
    column = pa.chunked_array([pa.array(cells[i:i + step], type=pa.string()) for i in range(0, len(cells), step)], type=pa.string())
    got = arrow_texts(column)
    assert got.dtype == object and got.tolist() == cells
    assert all(type(v) is str for v in got if v is not None)
    if len(cells) >= 1024 and len(set(cells)) <= len(cells) // 2:  # one object per distinct text
        assert len({id(v) for v in got if v is not None}) == len({v for v in cells if v is not None})


def test_a_long_table_with_repeated_cells_reads_alike_both_ways() -> None:
    rows = [[f"r{i}", ["EUR", "USD", ""][i % 3], '["A", "B"]' if i % 7 == 0 else f"v{i % 11}"] for i in range(3000)]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([["id", "currency", "x"], *rows])
    fast = tables._arrow_csv(buf.getvalue(), ",")
    assert fast is not None
    pd.testing.assert_frame_equal(fast.astype(object), _pandas(buf.getvalue(), ","))
    # a column of text alone stays Arrow's strings; one with JSON-list cells is Python values, equal texts one object
    assert isinstance(fast["currency"].dtype, pd.StringDtype) and fast["x"].dtype == object
    assert fast.loc[1, "x"] is fast.loc[12, "x"]
