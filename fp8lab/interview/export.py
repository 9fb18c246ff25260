"""Flash cards for Anki: an ``.apkg`` package (genanki) or a tab-separated text file with Anki's import headers.

Both hold one note per question, with the maths in Anki's MathJax delimiters (``2^-9`` becomes
``\\( 2^{-9} \\)``, see :func:`mathjax`). ``FILE.apkg`` needs genanki (``pip install fp8lab[anki]``):
a zip with an SQLite collection that Anki opens with File > Import, one deck, one note type
("fp8lab interview", fields Front and Back), each note's GUID from :func:`anki_guid`. Any other
suffix writes the text file described next.

Anki (2.1.55+) reads the header lines (``#separator:tab``, ``#html:true``, ``#notetype:Basic``,
``#deck:...``, ``#guid column:1``, ``#tags column:4``) and needs no import settings. Column 1 is
a GUID derived from the question id and the language (``fp8lab:en:fp8-e4m3fn-max``), so
importing a newer export updates the notes instead of duplicating them. Columns 2 and 3 are the
Basic note type's Front and Back (HTML), column 4 the tags (topic, difficulty, kind, the
question's own tags).

>>> from fp8lab.interview import get_question
>>> text = anki_text([get_question("fp8-e4m3fn-max")], lang="both")
>>> text.splitlines()[:6]
['#separator:tab', '#html:true', '#notetype:Basic', '#deck:fp8lab interview', '#guid column:1', '#tags column:4']
>>> text.splitlines()[6].split("\\t")[0]
'fp8lab:both:fp8-e4m3fn-max'
"""

from __future__ import annotations

import hashlib
import html
import pathlib
import re
from typing import Sequence

from .bank import LANGS, Question
from .grading import question_header, solution_html, unit_line
from .messages import say

__all__ = ["anki_guid", "anki_fields", "anki_text", "anki_package", "export", "mathjax", "EXPORT_LANGS"]

#: What ``lang`` may be for an export: one language, or both on one card.
EXPORT_LANGS = (*LANGS, "both")
_HEADER_TAGS_COLUMN = 4


def _check(lang: str) -> tuple[str, ...]:
    if lang not in EXPORT_LANGS:
        raise ValueError(f"lang must be one of {EXPORT_LANGS}, got {lang!r}")
    return LANGS if lang == "both" else (lang,)


def anki_guid(q: Question, lang: str = "en") -> str:
    """The note's GUID: stable for a question id and language, so a re-import updates the note.

    >>> from fp8lab.interview import get_question
    >>> anki_guid(get_question("fp8-e4m3fn-max"), "zh")
    'fp8lab:zh:fp8-e4m3fn-max'
    """
    _check(lang)
    return f"fp8lab:{lang}:{q.id}"


_PAREN = r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"  # up to three levels of parentheses
_NAME = r"[^\W\d]\w*"  # an identifier, Greek letters included (α)
_BASE = r"((?<![\w^|])(?<!\d\.)(?:\d+(?:\.\d+)?|" + _NAME + "(?:" + _PAREN + r")?)|\|[^|\s]+\|)"
_EXP = r"(" + _PAREN + r"|-?\d+(?:\.\d+)?|-?" + _NAME + "(?:" + _PAREN + r")?)"
_POWER = re.compile(_BASE + r"\^" + _EXP)


def mathjax(text: str) -> str:
    """Powers written with a caret (``2^-9``, ``2^(e+1)``, ``10^2.7``) in Anki's MathJax delimiters.

    >>> print(mathjax("min 2^-9, binade [2^e, 2^(e+1)), 1.75 × 2^8, 2^ceil(log2(amax / max)), 2^-7."))
    min \\( 2^{-9} \\), binade [\\( 2^{e} \\), \\( 2^{e+1} \\)), 1.75 × \\( 2^{8} \\), \\( 2^{ceil(log2(amax / max))} \\), \\( 2^{-7} \\).
    """
    def power(m: re.Match) -> str:
        exp = m.group(2)
        if exp.startswith("(") and exp.endswith(")"):
            exp = exp[1:-1]
        return f"\\( {m.group(1)}^{{{exp}}} \\)"

    return _POWER.sub(power, text)


def _one_line(text: str) -> str:
    return text.replace("\t", " ").replace("\r", "").replace("\n", "<br>")


def _front(q: Question, lang: str) -> str:
    meta = f"<div style='font-size:small;color:gray'>{html.escape(question_header(q, lang))}</div>"
    body = f"<div>{html.escape(q.text('prompt', lang))}</div>"
    if q.choices:
        items = "".join(f"<li>{html.escape(c)}</li>" for c in q.items("choices", lang))
        body += f"<ol type='A'>{items}</ol>"
    if q.kind == "numeric" and q.unit:
        body += f"<div>{html.escape(unit_line(q, lang))}</div>"
    return meta + body


def _tags(q: Question) -> str:
    tags = ["fp8lab", f"topic::{q.topic}", f"difficulty::{q.difficulty}", f"kind::{q.kind}", *q.tags]
    return " ".join(t.replace(" ", "_") for t in dict.fromkeys(tags))


def anki_fields(q: Question, lang: str = "en") -> tuple[str, str, str, str]:
    """The four columns of one note: GUID, Front (HTML), Back (HTML), tags (space-separated).

    >>> from fp8lab.interview import get_question
    >>> anki_fields(get_question("fp8-e4m3fn-max"))[3]
    'fp8lab topic::fp8 difficulty::easy kind::numeric e4m3 range'
    """
    langs = _check(lang)
    front = mathjax("<hr>".join(_front(q, x) for x in langs))
    back = mathjax("<hr>".join(solution_html(q, x) for x in langs))
    return anki_guid(q, lang), _one_line(front), _one_line(back), _tags(q)


def anki_text(questions: Sequence[Question], *, lang: str = "en", deck: str = "fp8lab interview") -> str:
    """The whole import file as text: the header lines, then one tab-separated row per question.

    >>> anki_text([]).count("\\n")
    6
    """
    _check(lang)
    if not isinstance(deck, str) or not deck.strip() or "\n" in deck:
        raise ValueError(f"deck must be a one-line, non-empty name, got {deck!r}")
    header = ["#separator:tab", "#html:true", "#notetype:Basic", f"#deck:{deck.strip()}", "#guid column:1",
              f"#tags column:{_HEADER_TAGS_COLUMN}"]
    rows = ["\t".join(anki_fields(q, lang)) for q in questions]
    return "\n".join(header + rows) + "\n"


def _stable_id(name: str) -> int:
    """A 31-bit id that depends only on ``name`` (Anki's model and deck ids must not change between exports)."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:4], "big") >> 1 | 1 << 30


def anki_package(questions: Sequence[Question], *, lang: str = "en", deck: str = "fp8lab interview"):
    """The cards as a ``genanki.Package`` (one deck, one note per question); needs genanki.

    >>> from fp8lab.interview import get_question
    >>> pkg = anki_package([get_question("fp8-e4m3fn-max")], lang="both")  # doctest: +SKIP
    """
    _check(lang)
    if not isinstance(deck, str) or not deck.strip() or "\n" in deck:
        raise ValueError(f"deck must be a one-line, non-empty name, got {deck!r}")
    try:
        import genanki
    except ImportError:
        raise ValueError(".apkg export needs genanki (pip install 'fp8lab[anki]'); or write a .txt file, which "
                         "Anki's File > Import reads with its headers") from None
    model = genanki.Model(_stable_id("fp8lab interview model"), "fp8lab interview",
                          fields=[{"name": "Front"}, {"name": "Back"}],
                          templates=[{"name": "Card 1", "qfmt": "{{Front}}",
                                      "afmt": "{{FrontSide}}<hr id=answer>{{Back}}"}])
    d = genanki.Deck(_stable_id(f"fp8lab deck {deck.strip()}"), deck.strip())
    for q in questions:
        guid, front, back, tags = anki_fields(q, lang)
        d.add_note(genanki.Note(model=model, fields=[front, back], guid=guid, tags=tags.split()))
    return genanki.Package(d)


def export(path: "str | pathlib.Path", questions: Sequence[Question], *, lang: str = "en",
           deck: str = "fp8lab interview") -> pathlib.Path:
    """Write the cards for ``questions`` to ``path``: an Anki package for ``.apkg``, else the text-import file (UTF-8).

    >>> import tempfile, pathlib
    >>> from fp8lab.interview import load_bank
    >>> p = export(pathlib.Path(tempfile.mkdtemp()) / "cards.txt", load_bank(topic="fp8"))
    >>> p.read_text(encoding="utf-8").startswith("#separator:tab")
    True
    """
    path = pathlib.Path(path)
    if path.suffix.lower() == ".apkg":
        anki_package(list(questions), lang=lang, deck=deck).write_to_file(str(path), timestamp=0.0)
        return path
    path.write_text(anki_text(list(questions), lang=lang, deck=deck), encoding="utf-8")
    return path
