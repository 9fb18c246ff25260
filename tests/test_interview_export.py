"""Anki flash cards: the text-import file read back and checked (headers, rows, stable unique GUIDs)."""

from __future__ import annotations

import csv
import html
import re

import pytest

import fp8lab.interview as iv
from fp8lab.cli import main
from fp8lab.interview.export import anki_text, mathjax

HEADERS = ["#separator:tab", "#html:true", "#notetype:Basic", "#deck:fp8lab interview", "#guid column:1",
           "#tags column:4"]


def read_back(path):
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == ""  # ends with a newline
    header = [x for x in lines if x.startswith("#")]
    body = [x for x in lines[len(header):-1]]
    rows = list(csv.reader(body, delimiter="\t", quoting=csv.QUOTE_NONE))
    return header, rows


@pytest.mark.parametrize("lang", ["en", "zh", "both"])
def test_export_reads_back_with_one_row_per_question(tmp_path, capsys, lang: str) -> None:
    path = tmp_path / f"cards-{lang}.txt"
    assert main(["quiz", "--export", str(path), "--lang", lang]) == 0
    out = capsys.readouterr().out
    assert str(len(iv.load_bank())) in out and str(path) in out and ("wrote" if lang != "zh" else "写入") in out
    header, rows = read_back(path)
    questions = iv.load_bank()
    assert header == HEADERS
    assert len(rows) == len(questions)
    assert all(len(r) == 4 for r in rows)
    guids = [r[0] for r in rows]
    assert len(set(guids)) == len(guids)
    assert guids == [f"fp8lab:{lang}:{q.id}" for q in questions]
    for (guid, front, back, tags), q in zip(rows, questions):
        assert "\n" not in front + back and not front.startswith('"')
        assert mathjax(html.escape(q.text("prompt", "en" if lang != "zh" else "zh"))) in front
        if lang == "both":
            assert mathjax(html.escape(q.text("prompt", "zh"))) in front and "<hr>" in back
        tag_list = tags.split()
        assert f"topic::{q.topic}" in tag_list and f"kind::{q.kind}" in tag_list and set(q.tags) <= set(tag_list)


def test_a_second_export_has_the_same_guids(tmp_path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    iv.export(a, iv.load_bank())
    iv.export(b, list(reversed(iv.load_bank())))
    guids_a = sorted(r[0] for r in read_back(a)[1])
    guids_b = sorted(r[0] for r in read_back(b)[1])
    assert guids_a == guids_b


def test_filters_and_deck_name(tmp_path) -> None:
    path = tmp_path / "fp8.txt"
    assert main(["quiz", "--export", str(path), "--topic", "fp8", "--deck", "FP8::drill"]) == 0
    header, rows = read_back(path)
    assert "#deck:FP8::drill" in header and len(rows) == len(iv.load_bank(topic="fp8"))


def test_cards_show_choices_and_the_answer() -> None:
    q = iv.get_question("fp8-e4m3-ieee-max")
    guid, front, back, _ = anki_text([q]).splitlines()[-1].split("\t")
    assert "<ol type='A'><li>240</li>" in front
    assert "The answer is A) 240." in back and "Why:" in back


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        anki_text([], lang="fr")
    with pytest.raises(ValueError):
        anki_text([], deck="two\nlines")
    with pytest.raises(ValueError, match="deck"):
        iv.export("cards.apkg", [], deck="")


# ----- the .apkg package, opened as Anki opens it: a zip holding an SQLite collection ---------------------------

def open_apkg(path):
    """(notes as (guid, fields, tags), decks, note types) read straight from the package's SQLite collection."""
    import json
    import sqlite3
    import zipfile

    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        assert "collection.anki2" in names and "media" in names
        assert json.loads(z.read("media")) == {}
        data = z.read("collection.anki2")
    db_path = path.with_suffix(".anki2")
    db_path.write_bytes(data)
    con = sqlite3.connect(db_path)
    try:
        notes = [(g, f.split("\x1f"), t.split()) for g, f, t in con.execute("select guid, flds, tags from notes")]
        cards = con.execute("select count(*) from cards").fetchone()[0]
        decks = json.loads(con.execute("select decks from col").fetchone()[0])
        models = json.loads(con.execute("select models from col").fetchone()[0])
    finally:
        con.close()
    return notes, cards, decks, models


def test_apkg_has_one_note_per_question_in_both_languages(tmp_path, capsys) -> None:
    pytest.importorskip("genanki")
    path = tmp_path / "cards.apkg"
    assert main(["quiz", "--export", str(path), "--lang", "both", "--deck", "FP8 面试"]) == 0
    notes, cards, decks, models = open_apkg(path)
    questions = iv.load_bank()
    assert len(notes) == cards == len(questions)
    by_guid = {g: (fields, tags) for g, fields, tags in notes}
    assert set(by_guid) == {f"fp8lab:both:{q.id}" for q in questions}
    assert "FP8 面试" in {d["name"] for d in decks.values()}
    assert [m["name"] for m in models.values()] == ["fp8lab interview"]
    for q in questions:
        (front, back), tags = by_guid[f"fp8lab:both:{q.id}"]
        for lang in ("en", "zh"):  # both languages on the card
            assert mathjax(html.escape(q.text("prompt", lang))) in front, (q.id, lang)
        assert f"topic::{q.topic}" in tags and f"kind::{q.kind}" in tags
        assert "<hr>" in back


def test_apkg_is_the_same_bytes_when_written_twice_and_updates_by_guid(tmp_path) -> None:
    pytest.importorskip("genanki")
    a, b = tmp_path / "a.apkg", tmp_path / "b.apkg"
    iv.export(a, iv.load_bank(topic="fp8"), lang="zh")
    iv.export(b, list(reversed(iv.load_bank(topic="fp8"))), lang="zh")
    na, nb = open_apkg(a)[0], open_apkg(b)[0]
    assert sorted(g for g, _, _ in na) == sorted(g for g, _, _ in nb)
    assert all(g.startswith("fp8lab:zh:") for g, _, _ in na)


def test_apkg_without_genanki_says_how_to_get_it(tmp_path, monkeypatch) -> None:
    import builtins

    real = builtins.__import__

    def no_genanki(name, *args, **kwargs):
        if name == "genanki":
            raise ImportError("no genanki")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_genanki)
    with pytest.raises(ValueError, match=r"fp8lab\[anki\]"):
        iv.export(tmp_path / "x.apkg", iv.load_bank(topic="fp8"))
    assert not (tmp_path / "x.apkg").exists()


@pytest.mark.parametrize("kind", ["txt", "apkg"])
def test_every_caret_power_is_mathjax_in_both_exports(tmp_path, kind) -> None:
    if kind == "apkg":
        pytest.importorskip("genanki")
    path = tmp_path / f"cards.{kind}"
    iv.export(path, iv.load_bank(), lang="both")
    fields = ([f for _, fs, _ in open_apkg(path)[0] for f in fs] if kind == "apkg"
              else [c for r in read_back(path)[1] for c in r[1:3]])
    text = " ".join(fields)
    outside = re.sub(r"\\\(.*?\\\)", "", text)
    assert "^" not in outside  # every power sits inside \( ... \)
    assert text.count("\\(") == text.count("\\)") > 100
    assert "\\( 2^{-9} \\)" in text


@pytest.mark.parametrize("text, expected", [
    ("2^-9", "\\( 2^{-9} \\)"), ("x = 1.75 × 2^8.", "x = 1.75 × \\( 2^{8} \\)."), ("2^(e+1)", "\\( 2^{e+1} \\)"),
    ("10^2.7", "\\( 10^{2.7} \\)"), ("2^-127..2^127", "\\( 2^{-127} \\)..\\( 2^{127} \\)"),
    ("2^(floor(log2 amax) - emax_elem)", "\\( 2^{floor(log2 amax) - emax_elem} \\)"), ("no power", "no power"),
    ("(2^-9)", "(\\( 2^{-9} \\))"), ("2^k", "\\( 2^{k} \\)"),
])
def test_mathjax_spellings(text, expected) -> None:
    assert mathjax(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("max|X_j|^α", "max\\( |X_j|^{α} \\)"), ("diag(s)^-1", "\\( diag(s)^{-1} \\)"),
    ("2^(floor(log2(amax)) - emax)", "\\( 2^{floor(log2(amax)) - emax} \\)"),
])
def test_mathjax_bases_and_nesting(text, expected) -> None:
    assert mathjax(text) == expected
