"""Flash cards for Anki: a tab-separated text file with Anki's import headers, one note per question.

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

import html
import pathlib
from typing import Sequence

from .bank import LANGS, Question
from .grading import solution_html
from .messages import say

__all__ = ["anki_guid", "anki_fields", "anki_text", "export", "EXPORT_LANGS"]

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


def _one_line(text: str) -> str:
    return text.replace("\t", " ").replace("\r", "").replace("\n", "<br>")


def _front(q: Question, lang: str) -> str:
    meta = f"<div style='font-size:small;color:gray'>{html.escape(q.topic)} · {q.kind} · {q.difficulty}</div>"
    body = f"<div>{html.escape(q.text('prompt', lang))}</div>"
    if q.choices:
        items = "".join(f"<li>{html.escape(c)}</li>" for c in q.items("choices", lang))
        body += f"<ol type='A'>{items}</ol>"
    if q.kind == "numeric" and q.unit:
        body += f"<div>({html.escape(say('unit', lang))}: {html.escape(q.unit)})</div>"
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
    front = "<hr>".join(_front(q, x) for x in langs)
    back = "<hr>".join(solution_html(q, x) for x in langs)
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


def export(path: "str | pathlib.Path", questions: Sequence[Question], *, lang: str = "en",
           deck: str = "fp8lab interview") -> pathlib.Path:
    """Write the Anki text-import file for ``questions`` to ``path`` (UTF-8) and return the path.

    >>> import tempfile, pathlib
    >>> from fp8lab.interview import load_bank
    >>> p = export(pathlib.Path(tempfile.mkdtemp()) / "cards.txt", load_bank(topic="fp8"))
    >>> p.read_text(encoding="utf-8").startswith("#separator:tab")
    True
    """
    path = pathlib.Path(path)
    if path.suffix.lower() == ".apkg":
        raise ValueError(".apkg export needs genanki, which fp8lab does not install; write a .txt file "
                         "(Anki: File > Import reads it with its headers)")
    path.write_text(anki_text(list(questions), lang=lang, deck=deck), encoding="utf-8")
    return path


