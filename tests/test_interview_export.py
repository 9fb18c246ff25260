"""Anki flash cards: the text-import file read back and checked (headers, rows, stable unique GUIDs)."""

from __future__ import annotations

import csv
import html

import pytest

import fp8lab.interview as iv
from fp8lab.cli import main
from fp8lab.interview.export import anki_text

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
    assert "wrote" in capsys.readouterr().out
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
        assert html.escape(q.text("prompt", "en" if lang != "zh" else "zh")) in front
        if lang == "both":
            assert html.escape(q.text("prompt", "zh")) in front and "<hr>" in back
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
    with pytest.raises(ValueError, match="genanki"):
        iv.export("cards.apkg", [])
