from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from extracteval.errors import InputError
from extracteval.io.config import load_mapping, parse_model_spec, safe_file_name
from extracteval.io.tables import is_kleister, load_fields_table, read_kleister, read_kleister_keys, read_table


def test_csv_cells_stay_strings_and_json_lists_become_lists(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text('id,parties,amount,code\n1,"[""A"", ""B""]",NA,007\n2,[not json,,\n', encoding="utf-8")
    f = read_table(p)
    assert f.loc[0, "parties"] == ["A", "B"]
    assert f.loc[0, "amount"] == "NA"  # no NA guessing: absent-value rules belong to the scorer
    assert f.loc[0, "code"] == "007"
    assert f.loc[1, "parties"] == "[not json"


def test_kleister_reader(tmp_path):
    p = tmp_path / "expected.tsv"
    p.write_text("party=Acme_Inc. party=Bolt_LLC term=3_years\n\njurisdiction=New_York\n", encoding="utf-8")
    assert is_kleister(p)
    f = read_kleister(p)
    assert list(f.index) == ["1", "2", "3"]
    assert f.loc["1", "party"] == ["Acme Inc.", "Bolt LLC"]
    assert f.loc["1", "term"] == "3 years"
    assert f.loc["2", "party"] is None
    assert f.loc["3", "jurisdiction"] == "New York"


def test_kleister_keys_and_skipped_cells(tmp_path):
    keys = tmp_path / "in.tsv.xz"
    keys.write_bytes(lzma.compress(b"a.pdf\tparty term\ttext\nb.pdf\tjurisdiction\ttext\n"))
    ids, asked = read_kleister_keys(keys)
    assert ids == ["a.pdf", "b.pdf"] and asked == [{"party", "term"}, {"jurisdiction"}]
    gold = tmp_path / "expected.tsv"
    gold.write_text("party=A\njurisdiction=X\n", encoding="utf-8")
    t = load_fields_table(gold, kleister_ids=ids, kleister_asked=asked)
    st = t.status[""]
    assert st.loc["a.pdf", "jurisdiction"] == "skipped" and st.loc["b.pdf", "jurisdiction"] == "ok"
    bad = tmp_path / "short.tsv"
    bad.write_text("party=A\n", encoding="utf-8")
    with pytest.raises(InputError, match="short.tsv: expected 2 lines"):
        load_fields_table(bad, kleister_ids=ids, kleister_asked=asked)


def test_tab_separated_table_is_not_kleister(tmp_path):
    p = tmp_path / "t.tsv"
    p.write_text("id\tname\n1\tx=y\n", encoding="utf-8")
    assert not is_kleister(p)
    t = load_fields_table(p)
    assert t.values[""].loc["1", "name"] == "x=y"


def test_jsonl_errors_name_the_line(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"id": 1}\n{"id": 2,\n', encoding="utf-8")
    with pytest.raises(InputError, match="t.jsonl: line 2: expected one JSON object per line"):
        read_table(p)
    p.write_text('{"id": 1}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(InputError, match="line 2: expected a JSON object, but found list"):
        read_table(p)


def test_parquet_garbage(tmp_path):
    p = tmp_path / "t.parquet"
    p.write_bytes(b"not parquet at all")
    with pytest.raises(InputError, match="t.parquet: not a readable Parquet file"):
        read_table(p)


def test_long_format_repeated_rows_make_lists(tmp_path):
    p = tmp_path / "long.csv"
    p.write_text("id,field,value\n1,party,A\n1,party,B\n1,date,2024-01-01\n2,party,C\n", encoding="utf-8")
    t = load_fields_table(p)
    assert t.layout == "long"
    f = t.values[""]
    assert f.loc["1", "party"] == ["A", "B"] and f.loc["2", "party"] == "C"
    assert f.loc["2", "date"] is None or f.loc["2", "date"] != f.loc["2", "date"]


def test_empty_id_names_the_line(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("id,a\n1,x\n,y\n", encoding="utf-8")
    with pytest.raises(InputError, match="t.csv: line 3: column 'id' is empty"):
        load_fields_table(p)


def test_config_files(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text("a: FUZZY\n", encoding="utf-8")
    assert load_mapping(y) == {"a": "FUZZY"}
    y.write_text("!!python/object/apply:os.system ['echo pwned']\n", encoding="utf-8")
    with pytest.raises(InputError, match="not valid YAML"):
        load_mapping(y)  # safe_load refuses to construct Python objects
    j = tmp_path / "c.json"
    j.write_text("[1]", encoding="utf-8")
    with pytest.raises(InputError, match="expected a mapping at the top level, but found list"):
        load_mapping(j)


def test_model_spec_and_safe_file_names():
    assert parse_model_spec("gpt=preds/a.csv")[0] == "gpt"
    assert parse_model_spec("preds/a.csv")[0] is None
    with pytest.raises(InputError, match="model name before '=' is empty"):
        parse_model_spec("=a.csv")
    assert safe_file_name("../../etc/passwd") == "etc_passwd"
    assert safe_file_name("<script>alert(1)</script>") == "script_alert_1_script"
    assert safe_file_name("...") == "unnamed"


def test_wide_file_with_model_column_holds_several_models(tmp_path):
    p = tmp_path / "preds.csv"
    p.write_text("id,model,a\n1,m1,x\n2,m1,y\n1,m2,x\n", encoding="utf-8")
    t = load_fields_table(p)
    assert sorted(t.values) == ["m1", "m2"]
    assert list(t.values["m1"].index) == ["1", "2"]
    p.write_text("id,model,a\n1,m1,x\n1,m1,y\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"\(model, record id\) pairs must be unique.*'m1 / 1'"):
        load_fields_table(p)


def test_read_utf8_gives_read_texts_bytes_and_errors(tmp_path):
    from extracteval.io.text_files import read_text, read_utf8

    for raw in (b"plain ascii\n", "\ufeffZ\u00fcrich \u65e5\u672c\n".encode(), "na\u00efve\n".encode()):
        p = tmp_path / "t.txt"
        p.write_bytes(raw)
        assert read_utf8(p) == read_text(p).encode("utf-8")  # BOM dropped, bytes otherwise kept
    p.write_bytes("ok\n\ufeffnot a BOM here\nbad \xff byte\n".encode("utf-8").replace(b"\xc3\xbf", b"\xff"))
    with pytest.raises(InputError) as want:
        read_text(p)
    with pytest.raises(InputError) as got:
        read_utf8(p)
    assert str(got.value) == str(want.value) and "line 3" in str(got.value)


def test_model_files_names_models_and_refuses_a_name_given_twice(tmp_path):
    from extracteval.errors import InputError
    from extracteval.io.config import model_files
    from extracteval.tasks.entities.chunks import open_entities_stream
    from extracteval.io.wide_tables import open_table_stream
    from extracteval.tasks.json.chunks import open_json_stream
    from extracteval.io.keyed_chunks import open_keyed_stream

    assert model_files(["gpt=a/x.csv", "b/llama.csv"]) == {"gpt": Path("a/x.csv"), "llama": Path("b/llama.csv")}
    want = r"model 'm' is given twice \(.*1\.jsonl and .*2\.jsonl\); each model needs a unique NAME"
    with pytest.raises(InputError, match=want):
        model_files(["m=1.jsonl", "m=2.jsonl"])
    # every streaming reader refuses it with the same words, before reading any file
    (tmp_path / "t.csv").write_text("id,a\n1,x\n")
    (tmp_path / "t.jsonl").write_text('{"id": "1"}\n')
    twice = [f"m={tmp_path / '1.jsonl'}", f"m={tmp_path / '2.jsonl'}"]
    for p in ("1.jsonl", "2.jsonl"):
        (tmp_path / p).write_text('{"id": "1"}\n')
    opens = [
        lambda: open_table_stream(tmp_path / "t.csv", [s.replace(".jsonl", ".csv") for s in twice], chunk_size=10),
        lambda: open_entities_stream(str(tmp_path / "t.jsonl"), twice, chunk_size=10),
        lambda: open_json_stream(tmp_path / "t.jsonl", twice, chunk_size=10),
        lambda: open_keyed_stream(str(tmp_path / "t.jsonl"), twice, chunk_size=10, truth_keys=["x"], output_keys=["y"], truth_value=lambda *a: None),
    ]
    for open_stream in opens:
        with pytest.raises(InputError, match=r"model 'm' is given twice \(.* and .*\); each model needs a unique NAME"):
            open_stream()


@pytest.mark.parametrize("ids", [
    ["r2", "r10", " r1", "r3\u3000", "\x1cr4", "r5\t"],  # unsorted, spaces Python strips (ideographic, file separator)
    [f"r{i:03d}" for i in range(50)],  # ascending: the sorted-file shortcut
])
def test_text_ids_read_in_arrow_as_the_cell_by_cell_reading_reads_them(tmp_path, ids):
    """A table's text ids are stripped and checked in Arrow: the same ids, the same index type
    and the same errors as read one cell at a time."""
    import pandas as pd

    path = tmp_path / "t.csv"
    path.write_text("id,x\n" + "".join(f'"{i}",v\n' for i in ids), encoding="utf-8")
    got = load_fields_table(path).values[""]
    assert got.index.tolist() == [i.strip() for i in ids]
    from extracteval.io.memory import in_memory

    frame = pd.read_csv(path, dtype=object, keep_default_na=False).astype(object)  # Python texts, read one by one
    cell_by_cell = load_fields_table(in_memory(frame, "t")).values[""]
    assert got.index.dtype == cell_by_cell.index.dtype and got.index.tolist() == cell_by_cell.index.tolist()
    for bad, message in ((ids[:2] + [ids[0]], "record ids must be unique"), (ids[:2] + ["  "], "is empty")):
        path.write_text("id,x\n" + "".join(f'"{i}",v\n' for i in bad), encoding="utf-8")
        with pytest.raises(InputError, match=message):
            load_fields_table(path)


def test_a_configuration_file_naming_a_key_twice_is_refused(tmp_path):
    """YAML and JSON parsers keep the last of two equal keys without a word; a strategies or
    weights file that does so is refused, naming the key (and the YAML line). A merge key may
    still override, as YAML says."""
    (tmp_path / "s.yaml").write_text("strategies:\n  name: FUZZY\n  amount: NUMERIC\n  name: EXACT\n")
    with pytest.raises(InputError, match=r"s.yaml: line 4: the key 'name' appears twice"):
        load_mapping(tmp_path / "s.yaml")
    (tmp_path / "s.json").write_text('{"strategies": {"name": "FUZZY", "name": "EXACT"}}')
    with pytest.raises(InputError, match=r"the key 'name' appears twice"):
        load_mapping(tmp_path / "s.json")
    (tmp_path / "m.yaml").write_text("base: &b\n  a: 1\nother:\n  <<: *b\n  a: 2\n")
    assert load_mapping(tmp_path / "m.yaml") == {"base": {"a": 1}, "other": {"a": 2}}
    (tmp_path / "ok.yaml").write_text("strategies: {name: FUZZY, amount: NUMERIC}\n")
    assert load_mapping(tmp_path / "ok.yaml") == {"strategies": {"name": "FUZZY", "amount": "NUMERIC"}}
