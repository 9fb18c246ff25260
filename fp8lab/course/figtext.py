"""Figures in the edition's language: titles, axis labels, legends and tick labels from one catalogue, in a CJK font.

The figure code draws in English. Its texts are translated line by line from the catalogue
``notebooks/zh/figures.toml``: an entry ``en`` -> ``zh``, where ``{name}`` in ``en`` stands for any
text (a computed number, a format name) that ``zh`` repeats, so computed titles translate too.

When a kernel shows a figure, the display hook (:func:`install`, run at kernel start by
:mod:`fp8lab.course.execute`) renders it a second time with its texts swapped and stores the Chinese
PNG in the output's metadata (``metadata["fp8lab_edition"]["zh"]["image/png"]``), with the lines it
could not translate and the glyphs the fonts lacked; :func:`swap_figures` makes that PNG the figure
of the Chinese edition. So one execution yields both editions' figures. In a kernel whose language is
Chinese (``FP8LAB_LANG=zh``, :mod:`fp8lab.lang`) the figure is shown in Chinese directly.

The Chinese glyphs come from Noto Sans SC (SIL Open Font License 1.1) in the pinned PyPI package
``justmytype-intl-cjk``, never from system fonts: :func:`cjk_font` cuts it down to the characters of
the catalogue at weight 400 (a variable font whose default instance is Thin) and caches the result.

>>> cat = FigureCatalogue.from_entries([("{n} values per binade", "每个二进制区间 {n} 个值")])
>>> cat.translate("8 values per binade")
'每个二进制区间 8 个值'
>>> cat.translate("float8_e4m3fn"), cat.untranslated("float8_e4m3fn\\nnormal values")
('float8_e4m3fn', ['normal values'])
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import os
import re
import tomllib
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

__all__ = ["FIGURES_TOML", "META_KEY", "FONT_FAMILY", "FigureCatalogue", "figure_catalogue", "catalogue_digest", "cjk_font",
           "use_cjk_font", "needs_translation", "translated_texts", "render_png", "edition_outputs", "install",
           "swap_figures"]

#: the catalogue of figure texts (English -> Chinese)
FIGURES_TOML = Path(__file__).resolve().parents[2] / "notebooks" / "zh" / "figures.toml"
#: the key of an output's metadata under which the other edition's rendering is stored
META_KEY = "fp8lab_edition"
#: the family name of the cut-down CJK fonts, before their hash (a new name: a subset is a modified font under the OFL)
FONT_FAMILY = "fp8lab CJK"

#: English words a figure may keep untranslated: names of formats, libraries, units and symbols
_KEEP = frozenset("""
e4m3 e5m2 e4m3fn e4m3fnuz e5m2fnuz e8m0 ue8m0 e2m1 e3m2 e2m3 bf16 fp16 fp32 fp8 fp6 fp4 int8 int4 mx mxfp8 mxfp6
mxfp4 nvfp4 ocp ieee float8 float16 float32 bfloat16 kv gqa mqa mha mla gemm gemms tflops tflop gb gib mb mib kb
kib tb tib ms us ns gpu cpu hbm sram nvidia amd deepseek llama qwen mistral gpt te torchao amax log2 log10 max min
nan inf sm fnuz fn rne adam adamw sgd bf tf32 fp vs
""".split())
_WORD = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z]{2,}(?![A-Za-z0-9_])")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


def needs_translation(line: str) -> bool:
    """Whether a line of figure text has English words (not names of formats, units or libraries).

    >>> needs_translation("float8_e4m3fn (epsilon 2^-3)"), needs_translation("2^-9  E4M3  448  h100-sxm")
    (True, False)
    """
    line = re.sub(r"\$[^$]*\$", " ", line)  # maths
    line = re.sub(r"[^\s(),;:]*\d[^\s(),;:]*", " ", line)  # identifiers with digits: h100-sxm, falcon-7b, x37.8
    for m in _WORD.finditer(line):
        w = m.group(0)
        if w.lower() in _KEEP:
            continue
        if w.islower() or (w[0].isupper() and w[1:].islower()):
            return True
    return False


@dataclass(frozen=True)
class FigureCatalogue:
    """Figure texts English -> Chinese: exact lines, and patterns whose ``{name}`` parts carry over."""

    exact: dict[str, str] = field(default_factory=dict)
    patterns: tuple[tuple[re.Pattern, str], ...] = ()

    @classmethod
    def from_entries(cls, entries: "list[tuple[str, str]]") -> "FigureCatalogue":
        """A catalogue of (English, Chinese) pairs; a pattern's placeholders must be the same in both.

        >>> FigureCatalogue.from_entries([("{a} of {b}", "{b} 中的 {a}")]).translate("3 of 8")
        '8 中的 3'
        """
        exact, patterns = {}, []
        for en, zh in entries:
            if not isinstance(en, str) or not isinstance(zh, str) or not en.strip() or not zh.strip():
                raise ValueError(f"a figure text needs non-empty en and zh strings, got {en!r} -> {zh!r}")
            names_en, names_zh = _PLACEHOLDER.findall(en), _PLACEHOLDER.findall(zh)
            if sorted(set(names_en)) != sorted(set(names_zh)) or len(names_en) != len(set(names_en)):
                raise ValueError(f"figure text {en!r}: the placeholders of en ({names_en}) and zh ({names_zh}) differ")
            if not names_en:
                exact[en.strip()] = zh.strip()
                continue
            parts, pos = [], 0
            for m in _PLACEHOLDER.finditer(en):
                parts.append(re.escape(en[pos:m.start()]) + f"(?P<{m.group(1)}>.+?)")
                pos = m.end()
            parts.append(re.escape(en[pos:]))
            patterns.append((re.compile("".join(parts).strip()), zh.strip()))
        return cls(exact, tuple(patterns))

    def translate_line(self, line: str) -> str | None:
        """The Chinese of one line, or None when the catalogue has none (surrounding spaces kept).

        >>> FigureCatalogue.from_entries([("normal values", "正规数")]).translate_line("  normal values")
        '  正规数'
        """
        core = line.strip()
        lead, trail = line[:len(line) - len(line.lstrip())], line[len(line.rstrip()):]
        if core in self.exact:
            return lead + self.exact[core] + trail
        for pattern, zh in self.patterns:
            m = pattern.fullmatch(core)
            if m:
                return lead + _PLACEHOLDER.sub(lambda p: m.group(p.group(1)), zh) + trail
        return None

    def translate(self, text: str) -> str:
        """``text`` translated whole where the catalogue has it (a title split over lines), else line by line.

        >>> FigureCatalogue.from_entries([("Underflow of\\noutput gradients", "输出梯度的\\n下溢")]).translate("Underflow of\\noutput gradients")
        '输出梯度的\\n下溢'
        """
        if "\n" in text and (whole := self.translate_line(text)) is not None:
            return whole
        return "\n".join(t if (t := self.translate_line(line)) is not None else line for line in text.split("\n"))

    def untranslated(self, text: str) -> list[str]:
        """The lines of ``text`` that need a translation and have none.

        >>> FigureCatalogue().untranslated("448\\nnormal values")
        ['normal values']
        """
        if "\n" in text and self.translate_line(text) is not None:
            return []
        return [line.strip() for line in text.split("\n")
                if needs_translation(line) and self.translate_line(line) is None]

    def characters(self) -> str:
        """Every character of the Chinese texts (what the CJK font must cover).

        >>> FigureCatalogue.from_entries([("a b", "乙甲")]).characters()
        '乙甲'
        """
        texts = list(self.exact.values()) + [zh for _, zh in self.patterns]
        return "".join(sorted(set("".join(texts))))


def _load(path: Path) -> FigureCatalogue:
    if not path.is_file():
        return FigureCatalogue()
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return FigureCatalogue.from_entries([(t.get("en"), t.get("zh")) for t in data.get("text", [])])


@lru_cache(maxsize=4)
def _cached(path: str, mtime: float) -> FigureCatalogue:
    return _load(Path(path))


def figure_catalogue(path: "str | Path" = FIGURES_TOML) -> FigureCatalogue:
    """The figure catalogue (read again when the file changes; empty when there is no file).

    >>> isinstance(figure_catalogue(), FigureCatalogue)
    True
    """
    path = Path(path)
    return _cached(str(path), path.stat().st_mtime if path.is_file() else 0.0)


def catalogue_digest(path: "str | Path" = FIGURES_TOML) -> str:
    """SHA-256 of the figure catalogue's bytes ("" when there is none): part of an executed chapter's cache key.

    >>> len(catalogue_digest()) in (0, 64)
    True
    """
    path = Path(path)
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


# --- the font ----------------------------------------------------------------------------------------------------

def _noto_sans_sc() -> Path:
    try:
        import justmytype_intl_cjk
    except ImportError:
        raise ImportError("Chinese figures need the CJK font package: pip install 'fp8lab[course]' "
                          "(requirements.txt pins justmytype-intl-cjk)") from None
    path = Path(justmytype_intl_cjk.__file__).parent / "fonts" / "ofl" / "notosanssc" / "NotoSansSC[wght].ttf"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the pinned justmytype-intl-cjk no longer ships Noto Sans SC there")
    return path


def _cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "fp8lab" / "fonts"


_PUNCTUATION = "，。：；、（）「」《》“”‘’！？—…·～％　×±≈→←↑↓≤≥"


def cjk_font(characters: str | None = None) -> tuple[Path, str]:
    """The CJK font for the figures, Noto Sans SC cut to ``characters`` (default: the catalogue's) at weight 400:
    its file and the family name under which matplotlib knows it.

    Written once into ``~/.cache/fp8lab/fonts``, named by a hash of the source font and the
    characters (under a file lock), and registered with matplotlib as ``fp8lab CJK <hash>``.

    >>> path, family = cjk_font("尾数"); path.name.startswith("fp8lab-cjk-"), family.startswith(FONT_FAMILY)
    (True, True)
    """
    chars = "".join(sorted(set((figure_catalogue().characters() if characters is None else characters)
                               + _PUNCTUATION)))
    src = _noto_sans_sc()
    key = hashlib.sha256(f"{src.stat().st_size}:{src.name}:{chars}".encode()).hexdigest()[:16]
    out = _cache_dir() / f"fp8lab-cjk-{key}.ttf"
    if not out.is_file():
        from filelock import FileLock

        out.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(out) + ".lock"):
            if not out.is_file():
                _cut_font(src, chars, out, f"{FONT_FAMILY} {key}")
    _register(str(out))
    return out, f"{FONT_FAMILY} {key}"


def _cut_font(src: Path, chars: str, out: Path, family: str) -> None:
    from fontTools import subset
    from fontTools.ttLib import TTFont
    from fontTools.varLib import instancer

    font = TTFont(str(src))
    sub = subset.Subsetter(subset.Options(layout_features=["*"], notdef_outline=True, name_IDs=["*"]))
    sub.populate(text=chars)
    sub.subset(font)
    font = instancer.instantiateVariableFont(font, {"wght": 400})
    font["OS/2"].usWeightClass = 400
    for record in font["name"].names:
        if record.nameID in (1, 16):
            record.string = family
        elif record.nameID in (4, 6):
            record.string = family + " Regular" if record.nameID == 4 else family.replace(" ", "") + "-Regular"
        elif record.nameID in (2, 17):
            record.string = "Regular"
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    font.save(str(tmp))
    os.replace(tmp, out)


@lru_cache(maxsize=8)
def _register(path: str) -> None:
    from matplotlib import font_manager

    font_manager.fontManager.addfont(path)


def use_cjk_font(fig: Any) -> str | None:
    """Give every text of ``fig`` that holds Chinese characters the CJK font as a fallback family; returns the
    family, or None when no text has Chinese.

    For figures drawn in Chinese from the start (texts chosen with :func:`fp8lab.lang.pick` in a Chinese
    kernel); the font covers the catalogue's characters and the figure's own.

    >>> import matplotlib; matplotlib.use("Agg"); from matplotlib.figure import Figure
    >>> fig = Figure(); ax = fig.add_subplot(); _ = ax.set_title("尾数"); _ = ax.set_xlabel("x")
    >>> family = use_cjk_font(fig)
    >>> family.startswith(FONT_FAMILY), family in ax.title.get_fontfamily(), family in ax.xaxis.label.get_fontfamily()
    (True, True, False)
    """
    from matplotlib.text import Text

    texts = [t for t in fig.findobj(match=Text) if _CJK.search(t.get_text())]
    if not texts:
        return None
    chars = "".join(sorted({c for t in texts for c in t.get_text() if _CJK.match(c)}))
    family = cjk_font(figure_catalogue().characters() + chars)[1]  # one font while the catalogue holds them all
    for t in texts:
        fam = list(t.get_fontfamily())
        if family not in fam:
            t.set_fontfamily(fam + [family])
    return family


# --- rendering a figure in Chinese ------------------------------------------------------------------------------

@contextlib.contextmanager
def translated_texts(fig: Any, catalogue: FigureCatalogue | None = None) -> Iterator[list[str]]:
    """Inside the block, every text of ``fig`` (titles, labels, legends, annotations, fixed tick labels) is
    in Chinese where the catalogue has it, in a font with CJK glyphs; yields the lines left untranslated.

    >>> import matplotlib; matplotlib.use("Agg"); from matplotlib.figure import Figure
    >>> fig = Figure(); ax = fig.add_subplot(); _ = ax.set_title("normal values")
    >>> cat = FigureCatalogue.from_entries([("normal values", "正规数")])
    >>> with translated_texts(fig, cat) as left:
    ...     ax.get_title(), sorted(set(left))
    ('正规数', [])
    >>> ax.get_title()
    'normal values'
    """
    from matplotlib.text import Text

    catalogue = figure_catalogue() if catalogue is None else catalogue
    family = cjk_font(catalogue.characters())[1]
    undo: list[Any] = []
    left: list[str] = []
    try:
        # tick labels are made at draw time by the formatters: wrap each so that its labels come out translated
        for axis in (a for ax in fig.get_axes() for a in (ax.xaxis, ax.yaxis)):
            for ticker in (axis.major, axis.minor):
                inner = ticker.formatter
                ticker.formatter = _translated_formatter(inner, catalogue, left)
                undo.append(lambda t=ticker, f=inner: setattr(t, "formatter", f))
        for text in fig.findobj(match=Text):
            old = text.get_text()
            if not old:
                continue
            new = catalogue.translate(old)
            left += catalogue.untranslated(old)
            if new != old:
                text.set_text(new)
                undo.append(lambda t=text, s=old: t.set_text(s))
            if _CJK.search(new) or new != old:
                fam = text.get_fontfamily()
                text.set_fontfamily(list(fam) + [family])
                undo.append(lambda t=text, f=fam: t.set_fontfamily(f))
        # tick labels are made again at draw time from the formatters: give them the CJK fallback too
        for ax in fig.get_axes():
            for t in ax.get_xticklabels(which="both") + ax.get_yticklabels(which="both"):
                fam = t.get_fontfamily()
                t.set_fontfamily(list(fam) + [family])
                undo.append(lambda t=t, f=fam: t.set_fontfamily(f))
        yield left  # filled in further while the figure is drawn (tick labels)
    finally:
        for step in reversed(undo):
            step()


def _translated_formatter(inner: Any, catalogue: FigureCatalogue, left: list[str]) -> Any:
    """A tick formatter that translates what ``inner`` writes (and notes in ``left`` what it could not)."""
    from matplotlib.ticker import Formatter

    class Translated(Formatter):
        def __init__(self) -> None:
            self.inner = inner
            self.axis = getattr(inner, "axis", None)

        def _t(self, label: Any) -> Any:
            if not isinstance(label, str) or not label:
                return label
            left.extend(catalogue.untranslated(label))
            return catalogue.translate(label)

        def __call__(self, x: Any, pos: Any = None) -> Any:
            return self._t(inner(x, pos))

        def format_ticks(self, values: Any) -> list[Any]:
            return [self._t(s) for s in inner.format_ticks(values)]

        def set_locs(self, locs: Any) -> None:
            inner.set_locs(locs)

        def get_offset(self) -> str:
            return inner.get_offset()

        def format_data(self, value: Any) -> str:
            return inner.format_data(value)

        def format_data_short(self, value: Any) -> str:
            return inner.format_data_short(value)

    return Translated()


class _GlyphLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if "glyph" in msg.lower() or "dummy symbol" in msg:
            self.messages.append(msg)


def render_png(fig: Any, catalogue: FigureCatalogue | None = None, **kwargs: Any) -> tuple[bytes, list[str], list[str]]:
    """The figure drawn in Chinese as PNG bytes, the lines left untranslated and the missing-glyph messages.

    Missing glyphs are what matplotlib warns ("Glyph ... missing from font(s)") or logs (mathtext's
    "substituting with a dummy symbol"): where it says so, the PNG has a tofu box.

    >>> import matplotlib; matplotlib.use("Agg"); from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(2, 1)); _ = fig.add_subplot().set_xlabel("normal values")
    >>> png, left, missing = render_png(fig, FigureCatalogue.from_entries([("normal values", "正规数")]))
    >>> png[:4], left, missing
    (b'\\x89PNG', [], [])
    """
    import io

    kwargs = {"format": "png", "bbox_inches": "tight", **kwargs}
    handler = _GlyphLog()
    loggers = [logging.getLogger(n) for n in ("matplotlib.mathtext", "matplotlib._mathtext", "matplotlib.font_manager")]
    for lg in loggers:
        lg.addHandler(handler)
    try:
        with translated_texts(fig, catalogue) as left, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            buf = io.BytesIO()
            fig.canvas.print_figure(buf, **kwargs)
    finally:
        for lg in loggers:
            lg.removeHandler(handler)
    missing = [str(w.message) for w in caught if "missing from font" in str(w.message)] + handler.messages
    return buf.getvalue(), sorted(set(left)), sorted(set(missing))


def edition_outputs(fig: Any) -> dict[str, Any]:
    """What the display hook stores for a figure: its Chinese PNG (base64), untranslated lines, missing glyphs.

    >>> import matplotlib; matplotlib.use("Agg"); from matplotlib.figure import Figure
    >>> sorted(edition_outputs(Figure(figsize=(1, 1))))
    ['missing_glyphs', 'untranslated', 'zh']
    """
    png, left, missing = render_png(fig)
    return {"zh": {"image/png": base64.b64encode(png).decode("ascii")}, "untranslated": left,
            "missing_glyphs": missing}


def _is_figure(obj: Any) -> bool:
    return type(obj).__module__.startswith("matplotlib.figure") and hasattr(obj, "savefig")


def install(shell: Any = None) -> bool:
    """Install the display hook in an IPython shell (default: the running one); False where there is none.

    Every figure shown gets its Chinese rendering in the output's metadata; where the language is
    Chinese (:func:`fp8lab.lang.current`), the Chinese rendering is the figure shown and the English
    one goes to the metadata. A failure in the hook is recorded there, never raised into the cell.
    """
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    formatter = shell.display_formatter
    if getattr(formatter, "_fp8lab_figtext", False):
        return True
    original = formatter.format

    def format(obj: Any, include: Any = None, exclude: Any = None) -> tuple[dict, dict]:
        data, md = original(obj, include=include, exclude=exclude)
        if _is_figure(obj) and "image/png" in data:
            try:
                extra = edition_outputs(obj)
                from ..lang import current

                if current() == "zh":
                    extra["en"] = {"image/png": data["image/png"]}
                    data = {**data, "image/png": extra.pop("zh")["image/png"]}
                md = {**(md or {}), META_KEY: extra}
            except Exception as e:  # noqa: BLE001 - the English figure is still shown
                md = {**(md or {}), META_KEY: {"error": f"{type(e).__name__}: {e}"}}
        return data, md

    formatter.format = format
    formatter._fp8lab_figtext = True
    return True


def swap_figures(nb: Any, lang: str) -> int:
    """Make each figure output of an executed notebook show its ``lang`` rendering, where it carries one; returns how many.

    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("f")])
    >>> nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data={"image/png": "EN"},
    ...                        metadata={META_KEY: {"zh": {"image/png": "ZH"}}})]
    >>> swap_figures(nb, "zh"), nb.cells[0].outputs[0].data["image/png"]
    (1, 'ZH')
    """
    swapped = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            meta = out.get("metadata", {}).get(META_KEY, {})
            other = meta.get(lang) if isinstance(meta, dict) else None
            if other and "image/png" in out.get("data", {}):
                out["data"]["image/png"] = other["image/png"]
                swapped += 1
    return swapped
