"""The course's editions: a chapter rendered in Chinese from its translation catalogue, and the checks on it.

One source, two editions (``notebooks/zh/README.md``): code cells and their outputs are shared, and
the Chinese edition swaps the text of each markdown cell for its translation in
``notebooks/zh/<stem>.toml``, keyed by cell id, beside the SHA-256 of the English it translates.

:func:`render` makes the Chinese notebook (markdown swapped; figures swapped for their Chinese
rendering where the executed notebook carries one, see :mod:`fp8lab.course.figtext`).
:func:`check_translation` lists what is wrong with a catalogue against its chapter:

* ``missing``: a markdown cell without a translation; ``stale``: the English changed since it was
  translated (hash mismatch); ``orphan``: an entry for a cell id the chapter does not have;
* ``numbers``: the numbers the Chinese states (read as :mod:`fp8lab.course.prose` reads them, after
  :func:`numbers_view`) differ from the English cell's;
* ``claims``: the claim markers ``<!-- claim:ID -->`` differ;
* ``terms``: a rendering the term base refuses (:mod:`fp8lab.terms` where it exists, else the
  ``avoid`` lists of ``fp8lab/data/termbase.toml``);
* ``english``: a run of English words left outside code, links, maths, names and sources.

>>> from nbformat.v4 import new_notebook, new_markdown_cell
>>> nb = new_notebook(cells=[new_markdown_cell("E4M3 tops out at 448.", id="a1")])
>>> cat = Catalogue("demo", {"a1": Entry("a1", en_sha256("E4M3 tops out at 448."), "E4M3 的最大值是 448。")})
>>> render(nb, cat).cells[0].source
'E4M3 的最大值是 448。'
>>> check_translation(nb, cat)
[]
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from .claims import claim_markers
from .prose import _CODE_LIKE, _CODE_SPAN, numbers_in_prose, unbacked_numbers, Finding as ProseFinding

__all__ = ["CATALOGUE_DIR", "Entry", "Catalogue", "Finding", "en_sha256", "load_catalogue", "catalogue_for",
           "render", "numbers_view", "english_runs", "term_findings", "check_translation", "unbacked_in_edition",
           "catalogue_toml", "write_edition", "edition_kernel", "heading_anchor", "anchored", "EDITION_LANGS"]

#: the folder of the Chinese catalogues (``notebooks/zh`` of this checkout)
CATALOGUE_DIR = Path(__file__).resolve().parents[2] / "notebooks" / "zh"
#: the editions a chapter can be rendered in besides its English source
EDITION_LANGS = ("zh",)


def en_sha256(source: str) -> str:
    """SHA-256 (hex) of an English cell's source, UTF-8: what a translation records beside itself.

    >>> en_sha256("")[:12]
    'e3b0c44298fc'
    """
    if not isinstance(source, str):
        raise TypeError(f"a cell source is a str, got {type(source).__name__}")
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Entry:
    """One translated markdown cell: its id, the hash of the English it translates, the Chinese markdown.

    >>> Entry("c1", "0" * 64, "中文").zh
    '中文'
    """

    cell_id: str
    en_sha256: str
    zh: str


@dataclass(frozen=True)
class Catalogue:
    """A chapter's translation catalogue: the chapter stem and its entries by cell id.

    >>> Catalogue("03_fp8", {}).entries
    {}
    """

    chapter: str
    entries: Mapping[str, Entry] = field(default_factory=dict)
    path: Path | None = None


def _source(cell: Mapping[str, Any]) -> str:
    src = cell.get("source", "")
    return src if isinstance(src, str) else "".join(src)


def load_catalogue(path: "str | Path") -> Catalogue:
    """Read a catalogue file (TOML, the format of ``notebooks/zh/README.md``); bad content raises ValueError.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False, encoding="utf-8") as f:
    ...     _ = f.write('chapter = "x"\\n[cells.a1]\\nen_sha256 = "' + "0" * 64 + '"\\nzh = \\'\\'\\'\\n中文\\n\\'\\'\\'\\n')
    >>> load_catalogue(f.name).entries["a1"].zh; os.unlink(f.name)
    '中文'
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: not valid TOML: {e}") from None
    chapter = data.get("chapter")
    if not isinstance(chapter, str) or not chapter:
        raise ValueError(f"{path}: the catalogue needs chapter = \"<stem>\"")
    cells = data.get("cells", {})
    if not isinstance(cells, dict):
        raise ValueError(f"{path}: [cells.<id>] tables expected")
    entries = {}
    for cell_id, entry in cells.items():
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: cells.{cell_id} is not a table")
        sha, zh = entry.get("en_sha256"), entry.get("zh")
        if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise ValueError(f"{path}: cells.{cell_id}.en_sha256 must be 64 lowercase hex digits")
        if not isinstance(zh, str):
            raise ValueError(f"{path}: cells.{cell_id}.zh must be a string")
        unknown = set(entry) - {"en_sha256", "zh"}
        if unknown:
            raise ValueError(f"{path}: cells.{cell_id} has unknown keys {sorted(unknown)}")
        entries[cell_id] = Entry(cell_id, sha, zh.rstrip("\n"))
    return Catalogue(chapter, entries, path)


def catalogue_for(chapter: "str | Path", folder: "str | Path" = CATALOGUE_DIR) -> Catalogue | None:
    """The catalogue of a chapter (a stem, file name or path), or None when it has none yet.

    >>> catalogue_for("99_no_such_chapter") is None
    True
    """
    stem = Path(chapter).name.removesuffix(".ipynb")
    path = Path(folder) / f"{stem}.toml"
    return load_catalogue(path) if path.is_file() else None


def render(nb: Any, catalogue: Catalogue | None, lang: str = "zh") -> Any:
    """A copy of ``nb`` in the edition ``lang``: markdown from the catalogue, code and outputs shared.

    A markdown cell without a translation keeps its English (the checks report it as missing); an
    output that carries its Chinese figure (:mod:`fp8lab.course.figtext`) shows that one. The
    notebook's metadata records the edition (``metadata.fp8lab.lang``).

    >>> from nbformat.v4 import new_notebook, new_markdown_cell
    >>> render(new_notebook(cells=[new_markdown_cell("x", id="a")]), None).metadata["fp8lab"]["lang"]
    'zh'
    """
    from ..lang import check_lang
    from .figtext import swap_figures

    lang = check_lang(lang)
    out = copy.deepcopy(nb)
    out.metadata.setdefault("fp8lab", {})["lang"] = lang
    if lang == "en":
        return out
    entries = catalogue.entries if catalogue is not None else {}
    for cell in out.cells:
        if cell.get("cell_type") == "markdown" and cell.get("id") in entries:
            cell["source"] = anchored(_source(cell), entries[cell["id"]].zh)
    swap_figures(out, lang)
    return out


_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)


def heading_anchor(heading: str) -> str:
    """The anchor JupyterLab and nbconvert give a heading: its text, markdown removed, spaces as dashes.

    >>> heading_anchor("Course map"), heading_anchor("4. The `scale` of [a tensor](x.ipynb)")
    ('Course-map', '4.-The-scale-of-a-tensor')
    """
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>|[`*_]", "", text).strip()
    return text.replace(" ", "-")


def anchored(en: str, zh: str) -> str:
    """``zh`` with each heading carrying the anchor of the English heading in the same place, so that links such
    as ``00_welcome.ipynb#Course-map`` keep their target in the Chinese edition (headings keep level and order).

    >>> anchored("## Course map\\ntext", "## 课程地图\\n正文")
    '## 课程地图 <a id="Course-map" name="Course-map"></a>\\n正文'
    """
    en_heads = [(len(m.group(1)), heading_anchor(m.group(2))) for m in _HEADING.finditer(_fenceless(en))]
    zh_heads = list(_HEADING.finditer(_fenceless(zh)))
    if not en_heads or len(en_heads) != len(zh_heads):
        return zh
    out, pos = [], 0
    for (level, anchor), m in zip(en_heads, zh_heads):
        if level != len(m.group(1)) or anchor == heading_anchor(m.group(2)) or f'id="{anchor}"' in m.group(0):
            continue
        out += [zh[pos:m.end()], f' <a id="{anchor}" name="{anchor}"></a>']
        pos = m.end()
    return "".join(out) + zh[pos:]


def _fenceless(markdown: str) -> str:
    """The markdown with fenced code blanked (same length), so that a ``#`` comment is no heading."""
    return re.sub(r"^\s*```.*?^\s*```", lambda m: re.sub(r"[^\n]", " ", m.group(0)), markdown, flags=re.S | re.M)


# --- reading Chinese prose with the English number reader ----------------------------------------------------

_CJK = re.compile(r"[\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
                  r"\ufe30-\ufe4f]")
_CJK_RUN = re.compile(_CJK.pattern + "+")
_FULLWIDTH = str.maketrans({"，": ", ", "。": ". ", "：": ": ", "；": "; ", "（": " (", "）": ") ", "！": "! ",
                            "？": "? ", "％": "%", "、": ", ", "《": " ", "》": " ", "“": " \"", "”": "\" ",
                            "‘": " '", "’": "' ", "　": " ", "～": "~", "【": " [", "】": "] "})
_ZH_REFERENCES = [
    (re.compile(r"第\s*(\d+(?:\.\d+)*)\s*(?:章|节|部分|步|行|页|版|条|列|项|讲|问|题)"), r" section \1 "),
    (re.compile(r"(?:章节|小节|附录)\s*(\d+(?:\.\d+)*)"), r" section \1 "),
    (re.compile(r"(?:表格?)\s*(\d+(?:\.\d+)*)"), r" table \1 "),
    (re.compile(r"(?:图)\s*(\d+(?:\.\d+)*)(?!\s*(?:位|个|倍|%))"), r" figure \1 "),
    (re.compile(r"(?:公式|式)\s*\(?(\d+(?:\.\d+)*)\)?"), r" equation \1 "),
]
_ZH_TIMES = re.compile(r"(\d(?:[\d.,]*\d)?)\s*倍")
_ZH_SOURCES = re.compile(r"^(\s*#+\s+(?:\d+(?:\.\d+)*\.?\s+)?)(?:参考资料|参考文献|资料来源|来源|出处|文献)", re.M)
_ZH_MYTH = re.compile(r"^(\s*>\s*\*\*)(?:误区|误解|迷思)", re.M)


def numbers_view(zh: str) -> str:
    """Chinese markdown made readable by :func:`fp8lab.course.prose.numbers_in_prose`, whose rules are English.

    Chinese references (第 3 章, 表 2) become English ones, ``N 倍`` becomes ``N×``, a Chinese
    sources heading or myth line its English form, full-width punctuation ASCII, and every other
    Chinese character a space (a number next to a Chinese character is not part of a name).

    >>> [n.text for n in numbers_in_prose(numbers_view("最大值是448，见第 11 章；约75％，快 8 倍"))]
    ['448', '75%', '8×']
    """
    text = zh.translate(_FULLWIDTH)
    for pattern, repl in _ZH_REFERENCES:
        text = pattern.sub(repl, text)
    text = _ZH_TIMES.sub(r"\1×", text)
    text = _ZH_SOURCES.sub(r"\1Sources ", text)
    text = _ZH_MYTH.sub(r"\1Myth ", text)
    lines = []
    for line in text.split("\n"):  # keep each line's own indent: a line that opened with Chinese is not code
        body = line.lstrip(" ")
        lines.append(line[:len(line) - len(body)] + _CJK_RUN.sub(" ", body).lstrip(" "))
    return "\n".join(lines)


def _comparable(markdown: str) -> str:
    """The markdown as both editions are compared: indents removed outside fenced code (layout, not content), and
    each code span that is code (a call, a string) a word, so that no line turns into an indented code line."""
    markdown = _CODE_SPAN.sub(lambda m: "CODE" if _CODE_LIKE.search(m.group(2)) else m.group(0), markdown)
    out, fenced = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        out.append(line if fenced else line.lstrip())
    return "\n".join(out)


def _number_set(numbers: Iterable[Any]) -> Counter:
    return Counter(n.value.normalize() for n in numbers)


# --- English left in a translation -----------------------------------------------------------------------------

#: English words a Chinese cell may keep: names of formats, libraries, papers, hardware and units
NAMES = frozenset("""
nvidia amd intel google meta microsoft openai deepseek llama mistral qwen gpt bert torch pytorch numpy jax
ml_dtypes jupyter jupyterlab nbgrader ipywidgets matplotlib cuda cublas cublaslt cutlass triton hopper blackwell
ada ampere volta hbm sram mma wgmma gemm gemms mx mxfp8 mxfp6 mxfp4 nvfp4 ocp ieee e4m3 e5m2 e4m3fn e4m3fnuz
e5m2fnuz e8m0 ue8m0 e2m1 e3m2 e2m3 bf16 fp16 fp32 fp8 fp6 fp4 int8 int4 kv mla gqa mqa mha adam adamw sgd fsdp
megatron te torchao gfloat d2l arxiv et al flashattention vllm sglang tensorrt softmax relu gelu swiglu
silu layernorm rmsnorm amax absmax nan inf inf-nan fn fnuz python pip
""".split())
_ENGLISH_WORD = re.compile(r"(?<![A-Za-z0-9_.\-/'])[A-Za-z]{2,}(?:'[a-z]+)?(?![A-Za-z0-9_\-/])")  # one letter: a symbol
_SKIP = [
    re.compile(r"(`+)(.+?)\1", re.S),                    # code spans
    re.compile(r"^\s*```.*?^\s*```", re.S | re.M),       # fenced code
    re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$|\\\(.+?\\\)|\\\[.+?\\\]", re.S),  # LaTeX
    re.compile(r"<!--.*?-->|<[^>]+>", re.S),             # HTML comments and tags
    re.compile(r"\]\([^)]*\)"),                           # link targets
    re.compile(r"https?://\S+"),                          # URLs
    re.compile(r"\*[^*\n]+\*|_[^_\n]+_|\"[^\"\n]+\"|“[^”]{1,400}”|「[^」]{1,400}」"),  # titles, quotations
]
#: what may stand between two words of one English run: spaces, ASCII punctuation, numbers and maths signs
_ENGLISH_GAP = re.compile(r"(?:[\s,;:()\-–—'’.!?%^+*/=<>~±×0-9\[\]]|(?<![A-Za-z])[A-Za-z](?![A-Za-z]))*")
#: a run of this many English words (not names) in a row is an untranslated sentence
ENGLISH_RUN = 4


def english_runs(zh: str, names: frozenset[str] = NAMES, run: int = ENGLISH_RUN) -> list[str]:
    """Runs of ``run`` or more English words in a row in a Chinese cell (code, links, maths, names, sources left out).

    >>> english_runs("用 `fl.quantize(x, 'e4m3')` 把 FP8 E4M3 的值量化：this sentence was left in English.")
    ['this sentence was left in English']
    >>> english_runs("见 NVIDIA Transformer Engine 的文档与 *FP8 Formats for Deep Learning*。")
    []
    """
    m = _ZH_SOURCES.search(zh) or re.search(r"^\s*#+\s+(?:Sources|References)\b", zh, re.M | re.I)
    text = zh[:m.start()] if m else zh
    for pattern in _SKIP:
        text = pattern.sub(lambda mm: " " * len(mm.group(0)), text)
    out, current, last_end = [], [], -1
    for w in _ENGLISH_WORD.finditer(text):
        word = w.group(0)
        is_name = word.lower() in names or any(c.isupper() for c in word[1:])  # E4M3, DeepSeek, NVIDIA
        gap = text[last_end:w.start()] if last_end >= 0 else ""
        if is_name or (current and not _ENGLISH_GAP.fullmatch(gap)):
            if _sentence(current, run):
                out.append(" ".join(current))
            current = []
        if not is_name:
            current.append(word)
        last_end = w.end()
    if _sentence(current, run):
        out.append(" ".join(current))
    return out


def _sentence(words: list[str], run: int) -> bool:
    """A run of English words reads as a sentence: long enough, and not a Title Case name (mostly lowercase)."""
    return len(words) >= run and 2 * sum(w[0].islower() for w in words) >= len(words)


# --- terms ------------------------------------------------------------------------------------------------------

_TERMBASE = Path(__file__).resolve().parents[1] / "data" / "termbase.toml"


def _avoid_list() -> list[tuple[str, str]]:
    data = tomllib.loads(_TERMBASE.read_text(encoding="utf-8"))
    return [(bad, t["zh"]) for t in data.get("term", []) for bad in t.get("avoid", [])]


#: what stays English in a Chinese cell by the catalogue's rules: code, maths, HTML, link targets, URLs, and titles
#: or quotations of English documents (an emphasised or quoted span without a Chinese character)
_ENGLISH_BY_RULE = [*_SKIP[:-1], re.compile(r"\*[^*\n]+\*|_[^_\n]+_|\"[^\"\n]+\"|“[^”]{1,400}”|「[^」]{1,400}」")]
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _without_english_titles(zh: str) -> str:
    """``zh`` with what stays English by rule blanked out, so that the term check reads only the Chinese prose.

    >>> _without_english_titles("见 *H100 Tensor Core GPU Architecture* 白皮书；*主权重* 保留").split()
    ['见', '白皮书；*主权重*', '保留']
    """
    for pattern in _ENGLISH_BY_RULE:
        zh = pattern.sub(lambda m: m.group(0) if _CJK.search(m.group(0)) else " " * len(m.group(0)), zh)
    return zh


def term_findings(zh: str, en: str | None = None) -> list[str]:
    """What the term base refuses in a Chinese text: :func:`fp8lab.terms.check_zh` when that module exists,
    else every ``avoid`` rendering of ``fp8lab/data/termbase.toml`` found in it.

    >>> term_findings("把指数偏移量减去") != []
    True
    """
    try:
        from .. import terms  # the term base's own checks (the interview bank's module)
    except ImportError:
        terms = None
    if terms is not None and hasattr(terms, "check_zh"):
        return [str(f) for f in terms.check_zh(_without_english_titles(zh), en)]
    plain = re.sub(r"(`+)(.+?)\1", " ", zh)
    return [f"{bad!r}: the term base says {good!r}" for bad, good in _avoid_list() if bad in plain]


# --- the checks -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Finding:
    """One thing wrong with a translation: its kind, the cell id, and what."""

    kind: str
    cell_id: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind:8s} {self.cell_id}: {self.detail}"


def check_translation(nb: Any, catalogue: Catalogue | None, *, terms: bool = True) -> list[Finding]:
    """Every finding of the catalogue against the chapter (kinds: missing, stale, orphan, numbers, claims, terms, english).

    >>> from nbformat.v4 import new_notebook, new_markdown_cell
    >>> nb = new_notebook(cells=[new_markdown_cell("The max is 448 and 57344.", id="a")])
    >>> cat = Catalogue("x", {"a": Entry("a", en_sha256("The max is 448 and 57344."), "最大值是 448 与 57334。")})
    >>> [f.kind for f in check_translation(nb, cat)]
    ['numbers']
    """
    entries = catalogue.entries if catalogue is not None else {}
    findings: list[Finding] = []
    ids = set()
    for index, cell in enumerate(nb.cells if hasattr(nb, "cells") else nb["cells"]):
        if cell.get("cell_type") != "markdown":
            if cell.get("id") is not None:
                ids.add(cell.get("id"))
            continue
        cell_id = cell.get("id")
        if cell_id is None:
            findings.append(Finding("missing", f"#{index}", "the markdown cell has no id to key a translation by"))
            continue
        ids.add(cell_id)
        en = _source(cell)
        entry = entries.get(cell_id)
        if entry is None:
            findings.append(Finding("missing", cell_id, f"no translation ({en[:50]!r}...)"))
            continue
        if entry.en_sha256 != en_sha256(en):
            findings.append(Finding("stale", cell_id, "the English changed since it was translated"))
        zh = entry.zh
        # both read the same way: an English cell may quote Chinese (the glossary), and a translation may wrap
        # its lines differently (prose.py reads an indented line with a quote in it as code)
        en_numbers, zh_numbers = (_number_set(numbers_in_prose(numbers_view(_comparable(t)))) for t in (en, zh))
        if en_numbers != zh_numbers:
            lost = sorted(str(v) for v in (en_numbers - zh_numbers).elements())
            added = sorted(str(v) for v in (zh_numbers - en_numbers).elements())
            findings.append(Finding("numbers", cell_id, f"not in the Chinese: {lost}; only in the Chinese: {added}"))
        try:
            en_claims, zh_claims = Counter(claim_markers(en)), Counter(claim_markers(zh))
        except ValueError as e:
            findings.append(Finding("claims", cell_id, str(e)))
        else:
            if en_claims != zh_claims:
                findings.append(Finding("claims", cell_id, f"English {sorted(en_claims.elements())}, "
                                                           f"Chinese {sorted(zh_claims.elements())}"))
        if terms:
            findings += [Finding("terms", cell_id, t) for t in term_findings(zh, en)]
        findings += [Finding("english", cell_id, f"untranslated: {r!r}") for r in english_runs(zh)]
    for cell_id in sorted(set(entries) - ids):
        findings.append(Finding("orphan", cell_id, "no markdown cell of the chapter has this id"))
    for cell_id in sorted(set(entries) & ids - {c.get("id") for c in nb.cells if c.get("cell_type") == "markdown"}):
        findings.append(Finding("orphan", cell_id, "the id is a code cell's (only markdown is translated)"))
    return findings


def unbacked_in_edition(executed: Any, catalogue: Catalogue | None) -> list[ProseFinding]:
    """:func:`fp8lab.course.prose.unbacked_numbers` on the Chinese text of an executed chapter.

    >>> from nbformat.v4 import new_notebook, new_markdown_cell, new_code_cell, new_output
    >>> code = new_code_cell("", id="c"); code.outputs = [new_output("stream", text="448.0")]
    >>> nb = new_notebook(cells=[code, new_markdown_cell("448", id="a")])
    >>> cat = Catalogue("x", {"a": Entry("a", en_sha256("448"), "最大值是 448，不是 480")})
    >>> [f.text for f in unbacked_in_edition(nb, cat)]
    ['480']
    """
    view = copy.deepcopy(executed)
    entries = catalogue.entries if catalogue is not None else {}
    for cell in view.cells:
        if cell.get("cell_type") == "markdown" and cell.get("id") in entries:
            cell["source"] = numbers_view(entries[cell["id"]].zh)
    return unbacked_numbers(view)


def _literal(text: str) -> str:
    if "'''" not in text:
        return "'''\n" + text + "\n'''"
    escaped = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return '"""\n' + escaped + '\n"""'


def catalogue_toml(nb: Any, chapter: str, translations: Mapping[str, str]) -> str:
    """The text of a catalogue for ``chapter``: each translated markdown cell with the hash of its English now.

    >>> from nbformat.v4 import new_notebook, new_markdown_cell
    >>> nb = new_notebook(cells=[new_markdown_cell("Hi", id="a")])
    >>> text = catalogue_toml(nb, "x", {"a": "你好"}); tomllib.loads(text)["cells"]["a"]["zh"]
    '你好\\n'
    """
    lines = [f"# {chapter}.ipynb 的中文文本 (Chinese text of {chapter}.ipynb)", f'chapter = "{chapter}"', ""]
    for cell in nb.cells:
        if cell.get("cell_type") == "markdown" and cell.get("id") in translations:
            lines += [f"[cells.{cell['id']}]", f'en_sha256 = "{en_sha256(_source(cell))}"',
                      f"zh = {_literal(translations[cell['id']].rstrip(chr(10)))}", ""]
    return "\n".join(lines)


# --- a working copy in an edition (make lab LANG=zh) ------------------------------------------------------------

def write_edition(source: "str | Path", dest: "str | Path", lang: str = "zh",
                  catalogues: "str | Path | None" = None) -> list[Path]:
    """Write every chapter of ``source`` rendered in ``lang`` to ``dest`` (what ``make lab LANG=zh`` copies from).

    A file is rewritten only when its text changes, so that the working copy sees a chapter as changed
    upstream only when its English or its translation changed. Returns the chapters written.

    >>> import tempfile, nbformat
    >>> src = Path(tempfile.mkdtemp()); nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("Hi", id="a")])
    >>> nbformat.write(nb, src / "00_a.ipynb"); (src / "zh").mkdir()
    >>> _ = (src / "zh" / "00_a.toml").write_text(catalogue_toml(nb, "00_a", {"a": "你好"}), encoding="utf-8")
    >>> [p.name for p in write_edition(src, src / "out")], write_edition(src, src / "out")
    (['00_a.ipynb'], [])
    >>> nbformat.read(src / "out" / "00_a.ipynb", as_version=4).cells[0].source
    '你好'
    """
    import nbformat

    source, dest = Path(source), Path(dest)
    folder = Path(catalogues) if catalogues is not None else source / "zh"
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(source.glob("*.ipynb")):
        if path.name.startswith("."):
            continue
        text = nbformat.writes(render(nbformat.read(path, as_version=4), catalogue_for(path, folder), lang))
        target = dest / path.name
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
            written.append(target)
    return written


def edition_kernel(folder: "str | Path", lang: str = "zh", python: str | None = None) -> dict[str, str]:
    """A kernel spec ``python3`` in ``folder/kernels`` for a working copy in ``lang``; returns the environment
    (``JUPYTER_PATH``) that makes a Jupyter server start it for the course's notebooks.

    Its kernels run with ``FP8LAB_LANG=lang`` (widgets and the quiz in that language, :mod:`fp8lab.lang`)
    and install the figure hook (:mod:`fp8lab.course.figtext`) at start, so figures show in ``lang``.

    >>> import tempfile, json
    >>> env = edition_kernel(tempfile.mkdtemp(), "zh", python="/usr/bin/python3")
    >>> spec = json.loads((Path(env["JUPYTER_PATH"].split(os.pathsep)[0]) / "kernels" / "python3" / "kernel.json").read_text())
    >>> spec["env"]["FP8LAB_LANG"], spec["argv"][0]
    ('zh', '/usr/bin/python3')
    """
    import json
    import sys

    from ..lang import ENV_VAR, check_lang

    lang = check_lang(lang)
    folder = Path(folder).resolve()
    spec_dir = folder / "kernels" / "python3"
    spec_dir.mkdir(parents=True, exist_ok=True)
    startup = spec_dir / "fp8lab_edition_startup.py"
    startup.write_text("import fp8lab.course.figtext as _fp8lab_figtext\n_fp8lab_figtext.install(get_ipython())\n",
                       encoding="utf-8")
    spec = {"argv": [python or sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
                     f"--IPKernelApp.exec_files={[str(startup)]!r}"],
            "display_name": "Python 3 (fp8lab 中文版)" if lang == "zh" else "Python 3 (fp8lab)",
            "language": "python", "env": {ENV_VAR: lang}, "metadata": {"debugger": True}}
    (spec_dir / "kernel.json").write_text(json.dumps(spec, ensure_ascii=False, indent=1), encoding="utf-8")
    path = os.environ.get("JUPYTER_PATH", "")
    return {"JUPYTER_PATH": str(folder) + (os.pathsep + path if path else "")}


def main(argv: list[str] | None = None) -> int:
    """``python -m fp8lab.course.edition [CHAPTER ...]``: print the findings of each chapter's catalogue."""
    import argparse

    import nbformat

    ap = argparse.ArgumentParser(prog="python -m fp8lab.course.edition", description="check the Chinese catalogues")
    ap.add_argument("chapters", nargs="*", help="stems or numbers (default: all)")
    ap.add_argument("--notebooks", type=Path, default=CATALOGUE_DIR.parent)
    args = ap.parse_args(argv)
    paths = sorted(args.notebooks.glob("[0-9][0-9]_*.ipynb"))
    if args.chapters:
        paths = [p for p in paths if any(p.stem == c or p.stem[:2] == c for c in args.chapters)]
    bad = 0
    for p in paths:
        findings = check_translation(nbformat.read(p, as_version=4), catalogue_for(p, args.notebooks / "zh"))
        kinds = Counter(f.kind for f in findings)
        print(f"{p.stem}: " + (", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "ok"))
        for f in findings:
            print("   ", f)
        bad += bool(findings)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
