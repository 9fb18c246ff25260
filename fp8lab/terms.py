"""The bilingual term base: one Simplified Chinese term per concept, and the check that Chinese text keeps to it.

The data is ``fp8lab/data/termbase.toml`` (one ``[[term]]`` per concept: ``en``, ``zh``, ``avoid``,
``meaning``, ``meaning_zh``, ``chapter``, optionally ``only_where_en``). Three functions are the API:

- :func:`terms` the entries, in file order;
- :func:`check_zh` the problems of one Chinese text (a rendering the term base avoids; a term such as
  截断 that stands only for what the English says, e.g. *truncat…*, used where the English says otherwise);
- :func:`glossary_markdown` the glossary table in English or Chinese, and :func:`glossary_cell` chapter 00's
  whole glossary cell (``tools/glossary_cell.py --write`` puts it into ``notebooks/00_welcome.ipynb``).

>>> check_zh("按就近舍入、中点取偶")
[]
>>> check_zh("遇到平局时取偶数")[0]
"'平局' (tie): write '中点'"
>>> check_zh("把离群值截断到 448", en_text="clip the outliers to 448")[0]
"'截断' stands for truncation (the English here says clip the outliers to 448): write '饱和' (saturation) or '裁剪' (clipping)"
"""

from __future__ import annotations

import functools
import pathlib
import re
import tomllib
from dataclasses import dataclass

__all__ = ["Term", "TERMBASE", "terms", "term", "check_zh", "glossary_markdown", "glossary_cell"]

#: Where the term base lives.
TERMBASE = pathlib.Path(__file__).with_name("data") / "termbase.toml"
_KEYS = {"en", "zh", "avoid", "meaning", "meaning_zh", "chapter", "only_where_en", "instead"}
_CJK = re.compile(r"[\u3400-\u9fff]")
_PAREN = re.compile(r"（[^（）]*）|\([^()]*\)")
_CODE = re.compile(r"(`+)(?:(?!\1).)+\1", re.S)
# a run of four or more Latin words (a quoted English title or sentence): English inside it is not a rendering
_ENGLISH_RUN = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-/]*(?:[ ,:()'\"]+[A-Za-z0-9][A-Za-z0-9.\-/]*){3,}")


@dataclass(frozen=True)
class Term:
    """One concept: its English term, its one Chinese rendering, the renderings to avoid, a line of meaning each.

    ``only_where_en`` (a regular expression) restricts ``zh`` to texts whose English matches it, and
    ``instead`` names the terms to write elsewhere (截断 is truncation only; clipping is 裁剪, saturation 饱和).

    >>> term("binade").zh
    '二进制区间'
    """

    en: str
    zh: str
    meaning: str
    meaning_zh: str
    chapter: str
    avoid: tuple[str, ...] = ()
    only_where_en: str | None = None
    instead: tuple[str, ...] = ()

    @property
    def zh_forms(self) -> tuple[str, ...]:
        """The Chinese rendering as written, and without its parenthesised gloss (``融合乘加（FMA）`` and ``融合乘加``).

        >>> term("fused multiply-add").zh_forms
        ('融合乘加（FMA）', '融合乘加')
        """
        bare = _PAREN.sub("", self.zh).strip()
        return (self.zh, bare) if bare and bare != self.zh else (self.zh,)


def _problem(path: pathlib.Path, i: int, message: str) -> ValueError:
    return ValueError(f"{path}: term {i + 1}: {message}")


@functools.lru_cache(maxsize=4)
def _load(path: pathlib.Path) -> tuple[Term, ...]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    unknown = set(data) - {"term"}
    if unknown:
        raise ValueError(f"{path}: unknown top-level keys {sorted(unknown)}")
    out: list[Term] = []
    for i, raw in enumerate(data.get("term", [])):
        bad = set(raw) - _KEYS
        if bad:
            raise _problem(path, i, f"unknown keys {sorted(bad)}")
        for key in ("en", "zh", "meaning", "meaning_zh", "chapter"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise _problem(path, i, f"{key} must be a non-empty string")
        avoid = raw.get("avoid", [])
        instead = raw.get("instead", [])
        for key, value in (("avoid", avoid), ("instead", instead)):
            if not isinstance(value, list) or not all(isinstance(a, str) and a.strip() for a in value):
                raise _problem(path, i, f"{key} must be a list of non-empty strings")
        only = raw.get("only_where_en")
        if only is not None:
            re.compile(only)
        out.append(Term(raw["en"], raw["zh"], raw["meaning"], raw["meaning_zh"], raw["chapter"], tuple(avoid),
                        only, tuple(instead)))
    _consistent(path, out)
    return tuple(out)


def _consistent(path: pathlib.Path, entries: list[Term]) -> None:
    """One entry per English term and per Chinese term; no term avoids another term's rendering."""
    seen_en: dict[str, int] = {}
    seen_zh: dict[str, int] = {}
    for i, t in enumerate(entries):
        for table, key in ((seen_en, t.en.lower()), (seen_zh, t.zh)):
            if key in table:
                raise _problem(path, i, f"{key!r} is already term {table[key] + 1}: one term per concept")
            table[key] = i
    renderings = {form: t for t in entries for form in t.zh_forms}
    for i, t in enumerate(entries):
        for a in t.avoid:
            if a in renderings:
                raise _problem(path, i, f"avoid {a!r} is the rendering of {renderings[a].en!r}")


def terms(path: "str | pathlib.Path | None" = None) -> tuple[Term, ...]:
    """Every entry of the term base (``path`` defaults to :data:`TERMBASE`), in file order.

    >>> len(terms()) >= 89, terms()[0].en
    (True, 'sign bit')
    """
    return _load(pathlib.Path(path) if path is not None else TERMBASE)


def term(en: str) -> Term:
    """The entry for an English term (case-insensitive), or a KeyError listing near names.

    >>> term("Ridge point").zh
    '脊点'
    """
    if not isinstance(en, str):
        raise TypeError(f"term takes the English term as a string, got {type(en).__name__}")
    for t in terms():
        if t.en.lower() == en.strip().lower():
            return t
    near = [t.en for t in terms() if en.strip().lower()[:4] in t.en.lower()][:5]
    raise KeyError(f"no term {en!r} in the term base" + (f"; near: {', '.join(near)}" if near else ""))


def _accepted_spans(text: str, entries: tuple[Term, ...]) -> list[tuple[int, int]]:
    """Where accepted Chinese terms stand in ``text`` (start, end)."""
    spans = []
    for form in {f for t in entries for f in t.zh_forms if _CJK.search(f)}:
        spans += [(m.start(), m.end()) for m in re.finditer(re.escape(form), text)]
    return spans


def _hits(text: str, word: str, accepted: list[tuple[int, int]]) -> list[int]:
    """Where ``word`` stands in ``text``, outside a longer accepted term that contains it."""
    out = []
    for m in re.finditer(re.escape(word), text):
        if not any(a <= m.start() and m.end() <= b and b - a > len(word) for a, b in accepted):
            out.append(m.start())
    return out


def check_zh(zh_text: str, en_text: str | None = None) -> list[str]:
    """The term problems of one Chinese text, one line each; empty when it keeps to the term base.

    A rendering in some term's ``avoid`` list is a problem wherever it stands (outside an accepted term
    that contains it). A term with ``only_where_en`` (截断: truncation) is a problem when ``en_text``, the
    English the Chinese translates, is given and does not match it; without ``en_text`` it is not judged.

    >>> check_zh("E4M3 的正规数与非规格化数")
    ["'非规格化数' (subnormal number): write '次正规数'"]
    >>> check_zh("截断到零", en_text="truncated toward zero")
    []
    >>> check_zh("跨越 9 个十进制数量级")
    []
    >>> check_zh("调用 `tensor_core_平局()` 即可")  # code spans are not prose
    []
    >>> check_zh("见 *NVIDIA H100 Tensor Core GPU Architecture* 白皮书"), check_zh("FP8 Tensor Core 的峰值")[0][:13]
    ([], "'Tensor Core'")
    """
    if not isinstance(zh_text, str):
        raise TypeError(f"check_zh takes the Chinese text as a string, got {type(zh_text).__name__}")
    if en_text is not None and not isinstance(en_text, str):
        raise TypeError(f"en_text must be a string or None, got {type(en_text).__name__}")
    entries = terms()
    zh_text = _CODE.sub(lambda m: " " * len(m.group(0)), zh_text)  # code spans are code, not prose
    zh_text = _ENGLISH_RUN.sub(lambda m: " " * len(m.group(0)), zh_text)  # nor are English titles and quotations
    accepted = _accepted_spans(zh_text, entries)
    problems: list[str] = []
    taken: list[tuple[int, int]] = []
    for a, t in sorted(((a, t) for t in entries for a in t.avoid), key=lambda p: -len(p[0])):
        # longest first, each place once: 非规格化数 is a subnormal, not also a 规格化数
        starts = [i for i in _hits(zh_text, a, accepted)
                  if not any(s <= i and i + len(a) <= e for s, e in taken)]
        if starts:
            taken += [(i, i + len(a)) for i in starts]
            problems.append(f"{a!r} ({t.en}): write {t.zh!r}")
    if en_text is not None:
        for t in entries:
            if t.only_where_en and any(f in zh_text for f in t.zh_forms) \
                    and not re.search(t.only_where_en, en_text, re.IGNORECASE):
                alternatives = " or ".join(f"{term(x).zh!r} ({x})" for x in t.instead) or "another term"
                shown = en_text if len(en_text) <= 60 else en_text[:57] + "..."
                problems.append(f"{t.zh!r} stands for {t.en} (the English here says {shown}): write {alternatives}")
    return problems


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def glossary_markdown(lang: str = "en") -> str:
    """The course glossary as a markdown table, one row per term, by chapter (file order within a chapter).

    ``"en"``: English, 中文, meaning, chapter (chapter 00's cell); ``"zh"``: 术语, English, 含义, 章节.

    >>> print(glossary_markdown("zh").splitlines()[2])
    | 符号位 | *sign bit* | 决定数值正负的那一位 | 01 |
    """
    if lang not in ("en", "zh"):
        raise ValueError(f"lang must be 'en' or 'zh', got {lang!r}")
    ordered = sorted(terms(), key=lambda t: t.chapter)
    if lang == "en":
        head = ["| English | 中文 | meaning | chapter |", "| --- | --- | --- | --- |"]
        rows = [f"| {_cell(t.en)} | {_cell(t.zh)} | {_cell(t.meaning)} | {t.chapter} |" for t in ordered]
    else:
        head = ["| 术语 | English | 含义 | 章节 |", "| --- | --- | --- | --- |"]
        # the English column in italics: by the Chinese edition's rules an emphasised English span is a name kept
        # as written, not an untranslated sentence or a term the Chinese text should have rendered
        rows = [f"| {_cell(t.zh)} | *{_cell(t.en)}* | {_cell(t.meaning_zh)} | {t.chapter} |" for t in ordered]
    return "\n".join([*head, *rows])


_CELL_INTRO = {
    "en": ("## Glossary · 术语表\n\n"
           "Each term links the English word used in the chapters with the one Simplified Chinese rendering the "
           "course uses\n(the term base `fp8lab/data/termbase.toml`), a one-line meaning and the chapter that "
           "introduces it.\nFormat names (E4M3, MXFP4, NVFP4, ...) stay as written in both languages.\n\n"),
    "zh": ("## 术语表 · Glossary\n\n"
           "每个术语给出各章使用的英文词、课程统一采用的简体中文译名（术语库 `fp8lab/data/termbase.toml`）、"
           "一句话含义以及引入它的章节。\n格式名称（E4M3、MXFP4、NVFP4 等）在两种语言中都保持原样。\n\n"),
}


def glossary_cell(lang: str = "en") -> str:
    """The markdown of chapter 00's glossary cell (id ``a00w0012``): heading, one paragraph, :func:`glossary_markdown`.

    >>> glossary_cell().splitlines()[0]
    '## Glossary · 术语表'
    """
    if lang not in _CELL_INTRO:
        raise ValueError(f"lang must be 'en' or 'zh', got {lang!r}")
    return _CELL_INTRO[lang] + glossary_markdown(lang)
