"""Build the course as a static HTML book: every chapter executed, figures embedded, links working, a contents page.

    .venv/bin/python tools/book.py [--out build/book] [--jobs 2] [--executed DIR] [--cache DIR [--cell-timeout S]]
                                   [--lang en|zh]

1. Execute each ``notebooks/NN_*.ipynb`` headless (nbclient, ``--jobs`` kernels at a time) in a
   scratch copy, from the ``notebooks/`` folder as the tests do. The tracked notebooks are never
   written. ``--executed DIR`` takes already executed notebooks of the same names from DIR instead
   (a notebook missing there is executed). ``--cache DIR`` executes through the content-keyed cache
   of :func:`fp8lab.course.execute.execute_cached` (the test run's: a chapter the notebook tests
   executed from the same sources is read, not run again; one another process is running is waited
   for after the others are done).
2. Convert each to HTML with nbconvert's ``lab`` template: figures are inlined as ``data:`` URIs,
   the CSS is inlined, nothing is fetched at build time. Links to ``*.ipynb`` become ``*.html``;
   widget outputs (they need a live kernel) become a note pointing at ``make lab``; every page gets a
   bar with the contents, the previous and the next chapter. Maths is typeset by a local copy of
   MathJax 2.7 (from the pinned PyPI package ``jupyter-server-mathjax``) in ``mathjax/``, so the
   book reads offline; no page loads anything from a CDN.
3. Write ``index.html``: the table of contents (number, title, opening question of each chapter)
   and the glossary taken from the welcome chapter's "Glossary" section, also as ``glossary.html``.

Everything goes to ``--out`` (git-ignored ``build/book`` by default), replaced on each run.
A chapter that raises stops the build with its name and the error.

``--lang zh`` writes the Chinese edition (``make book LANG=zh``: ``build/book/zh``) from the same
executed notebooks (through the same cache, so a chapter the English book executed is read, not run
again): each chapter rendered by :func:`fp8lab.course.edition.render` (markdown from
``notebooks/zh/<stem>.toml``, code and outputs shared, each figure its Chinese rendering), the page
texts in Chinese, and the glossary from the term base (:func:`fp8lab.terms.glossary_markdown`).
Maths on every page uses the STIX-Web fonts, the only ones the MathJax package ships (MathJax's
default, TeX, made every page ask for a font file that is not there).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import copy
import html
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
CHAPTER = re.compile(r"^(\d\d)_[A-Za-z0-9_]+\.ipynb$")
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = ("<p class='fp8lab-widget-note'><em>Interactive widget: it needs a live kernel. Open this chapter "
               "with <code>make lab</code> to use it; the plain function above it gives the same answers.</em></p>")
#: the page texts of each edition
TEXTS = {
    "en": {"contents": "Contents", "glossary": "Glossary", "widget": WIDGET_NOTE, "html_lang": "en",
           "title": "fp8lab: the course", "heading": "fp8lab: low-precision numerics for large models",
           "intro": "The executed course, built {built} by <code>make book</code>. The interactive widgets need a "
                    "live kernel: run <code>make lab</code> for those.",
           "columns": ("#", "chapter", "the question it opens with"),
           "no_glossary": "(The welcome chapter has no Glossary section yet.)"},
    "zh": {"contents": "目录", "glossary": "术语表", "html_lang": "zh-CN",
           "widget": ("<p class='fp8lab-widget-note'><em>交互控件：需要运行中的内核。用 <code>make lab LANG=zh</code> "
                      "打开本章即可使用；控件上方的普通函数给出同样的答案。</em></p>"),
           "title": "fp8lab：课程（中文版）", "heading": "fp8lab：大模型的低精度数值计算",
           "intro": "已执行的课程，由 <code>make book LANG=zh</code> 于 {built} 生成。交互控件需要运行中的内核："
                    "请用 <code>make lab LANG=zh</code>。<a href='../index.html'>English edition</a>",
           "columns": ("#", "章节", "开篇的问题"), "no_glossary": "（术语库尚不可用。）"},
}


@dataclass(frozen=True)
class Chapter:
    """One chapter of the book: its notebook, number, title and opening question."""

    path: Path
    number: str
    title: str
    hook: str

    @property
    def html_name(self) -> str:
        return self.path.stem + ".html"


def chapters(folder: Path = NOTEBOOKS) -> list[Chapter]:
    """The course chapters in ``folder`` (files named ``NN_name.ipynb``), in order, with titles and hooks."""
    out = []
    for path in sorted(folder.glob("*.ipynb")):
        m = CHAPTER.match(path.name)
        if not m:
            continue
        nb = nbformat.read(path, as_version=4)
        first = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
        lines = first.strip().splitlines()
        title = lines[0].lstrip("# ").strip() if lines else path.stem
        hook = " ".join(line.lstrip("> ").strip() for line in lines if line.startswith(">"))
        out.append(Chapter(path, m.group(1), title, hook))
    return out


def chapter_of(path: Path, nb: nbformat.NotebookNode) -> Chapter:
    """The Chapter entry (title and hook from the first markdown cell) of an (edition's) notebook."""
    m = CHAPTER.match(path.name)
    first = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    lines = first.strip().splitlines()
    title = lines[0].lstrip("# ").strip() if lines else path.stem
    hook = " ".join(line.lstrip("> ").strip() for line in lines if line.startswith(">"))
    return Chapter(path, m.group(1) if m else path.stem[:2], title, hook)


def execute(path: Path, cell_timeout: int = 300, cache: Path | None = None,
            wait: bool = True) -> tuple[str, nbformat.NotebookNode | None, float]:
    """Run one notebook headless from its folder with the course's runner; returns (name, executed notebook, seconds).

    :func:`fp8lab.course.execute.execute_chapter` is the runner the notebook tests use: it avoids
    nbclient's widget stall and runs each kernel single-threaded (two kernels share two cores here).
    With ``cache`` it goes through :func:`fp8lab.course.execute.execute_cached` (the seconds are
    those of the one execution); there, ``wait=False`` gives (name, None, 0.0) for a chapter another
    process is executing right now.
    """
    from fp8lab.course.execute import execute_cached, execute_chapter

    if cache is None:
        run = execute_chapter(path, cell_timeout=cell_timeout)
    else:
        run = execute_cached(path, cache, cell_timeout=cell_timeout, wait=wait)
        if run is None:
            return path.name, None, 0.0
    return path.name, run.notebook, run.wall_seconds


def clean_outputs(nb: nbformat.NotebookNode, note: str = WIDGET_NOTE) -> nbformat.NotebookNode:
    """A copy with widget outputs replaced by a note (their text repr says nothing without a kernel) and no widget state."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)  # else the page would load a widget manager from a CDN
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outs = []
        for o in cell.get("outputs", []):
            if o.get("output_type") in ("display_data", "execute_result") and WIDGET_MIME in o.get("data", {}):
                outs.append(nbformat.v4.new_output("display_data", data={"text/html": note}))
            else:
                outs.append(o)
        cell.outputs = outs
    return nb


LINK = re.compile(r'href="(?![a-zA-Z][a-zA-Z0-9+.-]*:|#|/)([^"#?]+?)\.ipynb((?:#[^"]*)?)"')


def rewrite_links(page: str) -> str:
    """Relative links to ``*.ipynb`` become links to ``*.html`` (anchors kept); absolute URLs are left alone.

    >>> rewrite_links('<a href="03_fp8.ipynb#2">x</a> <a href="https://x.org/a.ipynb">y</a>')
    '<a href="03_fp8.html#2">x</a> <a href="https://x.org/a.ipynb">y</a>'
    """
    return LINK.sub(lambda m: f'href="{m.group(1)}.html{m.group(2)}"', page)


STYLE = """<style>
.fp8lab-nav{font:14px system-ui,sans-serif;padding:8px 16px;border-bottom:1px solid #ddd;background:#fafafa;
position:sticky;top:0;z-index:10}.fp8lab-nav a{margin-right:1.5em}
.fp8lab-book{font:16px/1.5 system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em}
.fp8lab-book td,.fp8lab-book th{vertical-align:top;padding:4px 8px;border-bottom:1px solid #eee;text-align:left}
</style>"""


def nav_bar(i: int, chs: list[Chapter], contents: str = "Contents") -> str:
    parts = [f'<a href="index.html">{html.escape(contents)}</a>']
    if i > 0:
        parts.append(f'<a href="{chs[i - 1].html_name}">&larr; {html.escape(chs[i - 1].title)}</a>')
    if i + 1 < len(chs):
        parts.append(f'<a href="{chs[i + 1].html_name}">{html.escape(chs[i + 1].title)} &rarr;</a>')
    return f'<nav class="fp8lab-nav">{"".join(parts)}</nav>'


#: Where the pages find MathJax: the copy :func:`copy_mathjax` puts beside them.
MATHJAX_URL = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"  # configs the package ships
#: MathJax's output fonts: the package ships STIX-Web only, and MathJax's default (TeX) is not there, so without
#: this every page asked for a missing font file (and fell back to image fonts, also missing)
MATHJAX_FONTS = ('<script type="text/x-mathjax-config">MathJax.Hub.Config({"HTML-CSS": {availableFonts: '
                 '["STIX-Web"], preferredFont: "STIX-Web", webFont: "STIX-Web", imageFont: null}, '
                 'SVG: {font: "STIX-Web"}});</script>')


def mathjax_fonts(page: str) -> str:
    """The page with :data:`MATHJAX_FONTS` right before the script that loads MathJax (it must come first).

    >>> "STIX-Web" in mathjax_fonts('<script src="mathjax/MathJax.js?config=X"> </script>')
    True
    """
    return re.sub(r'(<script[^>]*src="mathjax/MathJax\.js)', lambda m: MATHJAX_FONTS + m.group(1), page, count=1)


def mathjax_font_folders(mathjax: Path) -> list[str]:
    """The output fonts a MathJax copy holds (``fonts/HTML-CSS/<name>``), which :data:`MATHJAX_FONTS` must name."""
    return sorted(p.name for p in (mathjax / "fonts" / "HTML-CSS").iterdir() if p.is_dir())


def copy_mathjax(dest: Path) -> None:
    """Copy MathJax's files (the ``jupyter-server-mathjax`` package's static folder) to ``dest``."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        raise SystemExit("the book typesets maths with a local MathJax: pip install jupyter-server-mathjax "
                         "(requirements.txt pins it)") from None
    src = Path(jupyter_server_mathjax.__file__).parent / "static"
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("*.map", "__pycache__"))


def to_html(nb: nbformat.NotebookNode, title: str, html_lang: str = "en") -> str:
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", mathjax_url=MATHJAX_URL)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    # the template loads require.js from a CDN for JavaScript outputs; the book has none (widget outputs
    # become a note), so the tag goes and the page reads offline
    body = re.sub(r'<script[^>]*src="https?://[^"]*require[^"]*"[^>]*>\s*</script>\s*', "", body)
    if html_lang != "en":
        body = re.sub(r"<html(\s[^>]*)?>", f'<html lang="{html_lang}">', body, count=1)
    return mathjax_fonts(body)


def glossary_section(welcome: nbformat.NotebookNode | None) -> str:
    """The markdown of the welcome chapter's section whose heading contains "Glossary" (to the next heading of its level)."""
    if welcome is None:
        return ""
    text = "\n\n".join(c.source for c in welcome.cells if c.cell_type == "markdown")
    lines = text.splitlines()
    start, level = None, 0
    for i, line in enumerate(lines):
        m = re.match(r"^(#+)\s", line)
        if m and "glossary" in line.lower() and start is None:
            start, level = i, len(m.group(1))
        elif m and start is not None and len(m.group(1)) <= level:
            return "\n".join(lines[start:i])
    return "\n".join(lines[start:]) if start is not None else ""


def markdown_to_html(text: str) -> str:
    import mistune

    return mistune.create_markdown(plugins=["table", "strikethrough"], escape=False)(text)


def inline_markdown(text: str) -> str:
    """One line of markdown (a chapter's hook: code spans, emphasis) as inline HTML, without the paragraph."""
    out = markdown_to_html(text).strip()
    return out[3:-4] if out.startswith("<p>") and out.endswith("</p>") else out


def index_page(chs: list[Chapter], glossary_md: str, times: dict[str, float], lang: str = "en") -> str:
    t = TEXTS[lang]
    rows = "".join(
        f'<tr><td>{c.number}</td><td><a href="{c.html_name}">{html.escape(c.title)}</a></td>'
        f"<td>{inline_markdown(c.hook)}</td></tr>" for c in chs)
    glossary = (f'<section id="glossary">{rewrite_links(markdown_to_html(glossary_md))}</section>'
                if glossary_md else f"<h2>{t['glossary']}</h2><p>{t['no_glossary']}</p>")
    built = time.strftime("%Y-%m-%d %H:%M")
    head = "".join(f"<th>{h}</th>" for h in t["columns"])
    return (f"<!DOCTYPE html><html lang='{t['html_lang']}'><head><meta charset='utf-8'><title>{t['title']}</title>"
            f"{STYLE}</head><body><div class='fp8lab-book'><h1>{t['heading']}</h1>"
            f"<p>{t['intro'].format(built=built)}</p>"
            f"<h2 id='contents'>{t['contents']}</h2><table><tr>{head}</tr>"
            f"{rows}</table>{glossary}</div></body></html>")


def edition_glossary(lang: str, welcome: nbformat.NotebookNode | None) -> str:
    """The glossary's markdown for an edition: the welcome chapter's section in English; in Chinese the term base's
    (:func:`fp8lab.terms.glossary_markdown`, under a heading), else the (translated) welcome chapter's section."""
    if lang != "en":
        try:
            from fp8lab.terms import glossary_markdown
        except ImportError:
            glossary_markdown = None
        if glossary_markdown is not None:
            return f"## {TEXTS[lang]['glossary']}\n\n" + glossary_markdown(lang)
    return glossary_section(welcome)


def build(out: Path, jobs: int = 2, executed: Path | None = None, folder: Path = NOTEBOOKS,
          keep_executed: Path | None = None, cache: Path | None = None, cell_timeout: int = 300,
          lang: str = "en", catalogues: Path | None = None) -> dict[str, float]:
    """Build the book into ``out`` (replaced); returns the seconds each chapter took to execute (0 if reused).

    ``keep_executed`` is a folder to write the executed notebooks to (for reuse with ``executed``);
    ``cache`` a folder of :func:`fp8lab.course.execute.execute_cached` to execute through (seconds:
    those of the one execution, also when it was another process's); ``cell_timeout`` bounds each cell.
    ``lang`` is the edition (``zh``: chapters rendered from the catalogues in ``catalogues``, default
    ``<folder>/zh``); the executed notebooks are the same for every edition.
    """
    from fp8lab.lang import check_lang

    lang = check_lang(lang)
    chs = chapters(folder)
    if not chs:
        raise SystemExit(f"no chapters (NN_name.ipynb) in {folder}")
    done: dict[str, nbformat.NotebookNode] = {}
    times: dict[str, float] = {}
    todo = []
    for c in chs:
        cached = executed / c.path.name if executed else None
        if cached is not None and cached.exists():
            done[c.path.name] = nbformat.read(cached, as_version=4)
            times[c.path.name] = 0.0
        else:
            todo.append(c.path)
    # with a cache, a first pass skips the chapters another process is executing; the second waits for them
    for wait in ((False, True) if cache is not None else (True,)):
        if not todo:
            break
        with cf.ProcessPoolExecutor(max_workers=max(1, min(jobs, len(todo)))) as pool:
            futures = {pool.submit(execute, p, cell_timeout, cache, wait): p for p in todo}
            todo = []
            for f in cf.as_completed(futures):
                try:
                    name, nb, seconds = f.result()
                except Exception as e:  # noqa: BLE001 - name the chapter, then stop
                    for other in futures:
                        other.cancel()
                    raise SystemExit(f"book: {futures[f].name} failed to execute:\n{e}") from None
                if nb is None:
                    todo.append(futures[f])
                    continue
                done[name], times[name] = nb, seconds
                print(f"  executed {name} in {seconds:.1f} s", flush=True)
        todo.sort()
    if keep_executed is not None:
        keep_executed.mkdir(parents=True, exist_ok=True)
        for name, nb in done.items():
            nbformat.write(nb, keep_executed / name)
    if lang != "en":
        from fp8lab.course.edition import catalogue_for, render

        folder_zh = catalogues if catalogues is not None else folder / lang
        done = {name: render(nb, catalogue_for(name, folder_zh), lang) for name, nb in done.items()}
        chs = [chapter_of(c.path, done[c.path.name]) for c in chs]
    t = TEXTS[lang]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="book-", dir=out.parent))
    try:
        copy_mathjax(tmp / "mathjax")
        for i, c in enumerate(chs):
            page = rewrite_links(to_html(clean_outputs(done[c.path.name], t["widget"]), c.title, t["html_lang"]))
            page = page.replace("</head>", STYLE + "</head>", 1)
            page = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + nav_bar(i, chs, t["contents"]), page, count=1)
            (tmp / c.html_name).write_text(page, encoding="utf-8")
        welcome = next((done[c.path.name] for c in chs if c.number == "00"), None)
        gloss = edition_glossary(lang, welcome)
        (tmp / "index.html").write_text(index_page(chs, gloss, times, lang), encoding="utf-8")
        if gloss:
            (tmp / "glossary.html").write_text(
                f"<!DOCTYPE html><html lang='{t['html_lang']}'><head><meta charset='utf-8'><title>{t['glossary']}"
                f"</title>{STYLE}</head><body><nav class='fp8lab-nav'><a href='index.html'>{t['contents']}</a></nav>"
                f"<div class='fp8lab-book'>{rewrite_links(markdown_to_html(gloss))}</div></body></html>",
                encoding="utf-8")
        for edition in TEXTS:  # another edition's book inside this one's folder (build/book/zh) stays
            if edition != lang and (out / edition / "index.html").is_file() and not (tmp / edition).exists():
                os.replace(out / edition, tmp / edition)
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "book", help="output folder (replaced)")
    ap.add_argument("--jobs", type=int, default=2, help="notebooks executed at once")
    ap.add_argument("--executed", type=Path, default=None, help="reuse executed notebooks of the same names from here")
    ap.add_argument("--keep-executed", type=Path, default=None, help="also write the executed notebooks here")
    ap.add_argument("--cache", type=Path, default=None,
                    help="execute through this content-keyed cache folder (fp8lab.course.execute.execute_cached)")
    ap.add_argument("--cell-timeout", type=int, default=300, help="seconds each cell may take")
    ap.add_argument("--lang", default="en", help="the edition: en (default) or zh (the Chinese text of notebooks/zh)")
    args = ap.parse_args(argv)
    try:
        from fp8lab.lang import check_lang

        args.lang = check_lang(args.lang)
    except (TypeError, ValueError) as e:
        ap.error(str(e))
    t = time.perf_counter()
    build(args.out.resolve(), jobs=args.jobs, executed=args.executed, keep_executed=args.keep_executed,
          cache=args.cache, cell_timeout=args.cell_timeout, lang=args.lang)
    print(f"book: {args.out / 'index.html'} ({time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
