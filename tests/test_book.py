"""`make book`: the executed course as a static HTML book with a contents page, figures, working links and the glossary.

The kernel tests build the whole book once per run (``tools/book.py --cache``: every chapter executed
through the run's ``course_cache``, so a chapter the notebook tests executed from the same bytes and
sources is read back instead of run again) into a temporary folder and check it; one builds a
two-chapter book without a cache, executing it as ``make book`` does; the fast tests check the pieces
of ``tools/book.py`` on small inputs.
"""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
CHAPTER = re.compile(r"^(\d\d)_[A-Za-z0-9_]+\.ipynb$")
GLOSSARY_TERMS = ("尾数", "指数偏置", "次正规数", "缩放因子", "主权重")  # the examples
#: the notebook tests' cell timeout (tests/test_notebooks.py): the cache key includes it, so the book
#: reads the chapters those tests executed
CELL_TIMEOUT_S = 30


def load_book_module():
    spec = importlib.util.spec_from_file_location("fp8lab_book", ROOT / "tools" / "book.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


book = load_book_module()


def chapter_files() -> list[str]:
    """The chapters in notebooks/ now (read when the book is built: chapters may be added while tests run)."""
    return sorted(p.name for p in NOTEBOOKS.glob("*.ipynb") if CHAPTER.match(p.name))


# --- the pieces (fast) --------------------------------------------------------------------------------------------

def test_links_to_notebooks_become_links_to_pages():
    page = ('<a href="03_fp8.ipynb">a</a> <a href="00_welcome.ipynb#Course-map">b</a> '
            '<a href="https://github.com/x/y/blob/main/a.ipynb">c</a> <a href="#Sources">d</a> <a href="data.json">e</a>')
    out = book.rewrite_links(page)
    assert 'href="03_fp8.html"' in out and 'href="00_welcome.html#Course-map"' in out
    assert 'href="https://github.com/x/y/blob/main/a.ipynb"' in out and 'href="#Sources"' in out and 'href="data.json"' in out


def test_chapters_are_read_in_order_with_title_and_hook(tmp_path):
    for name, text in (("01_b.ipynb", "# 01 — B\n\n> Why b?\n> Really."), ("00_a.ipynb", "# 00 — A"), ("scratch.ipynb", "# x")):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
        nbformat.write(nb, tmp_path / name)
    chs = book.chapters(tmp_path)
    assert [(c.number, c.title, c.hook) for c in chs] == [("00", "00 — A", ""), ("01", "01 — B", "Why b? Really.")]
    assert chs[1].html_name == "01_b.html"


def test_the_glossary_section_is_cut_at_the_next_heading_of_its_level():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Welcome\n\n## Course map\n\ntext"),
        nbformat.v4.new_markdown_cell("## Glossary (English / 中文)\n\n| term | 中文 |\n|---|---|\n| mantissa | 尾数 |"),
        nbformat.v4.new_markdown_cell("### More terms\n\n| bias | 指数偏置 |"),
        nbformat.v4.new_markdown_cell("## Next steps\n\nnot glossary")])
    section = book.glossary_section(nb)
    assert section.startswith("## Glossary") and "尾数" in section and "指数偏置" in section and "not glossary" not in section
    assert book.glossary_section(None) == ""
    table = book.markdown_to_html(section)
    assert "<table>" in table and "<td>尾数</td>" in table


def test_widget_outputs_become_a_note_and_lose_their_state():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("w")])
    nb.cells[0].outputs = [nbformat.v4.new_output(
        "display_data", data={"text/plain": "interactive(children=(...))",
                              "application/vnd.jupyter.widget-view+json": {"model_id": "x", "version_major": 2}}),
        nbformat.v4.new_output("stream", name="stdout", text="448\n")]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    out = book.clean_outputs(nb)
    assert "widgets" not in out.metadata and "widgets" in nb.metadata  # a copy
    assert out.cells[0].outputs[0].data == {"text/html": book.WIDGET_NOTE}
    assert out.cells[0].outputs[1].text == "448\n"


@pytest.mark.kernel
def test_a_small_book_is_built_executing_its_chapters(tmp_path):
    """Without a cache tools/book.py executes every chapter itself (two kernels at a time), as ``make book`` does."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    welcome = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 00 — A\n\n> Why `a`?\n\n[next](01_b.ipynb)"),
        nbformat.v4.new_code_cell("print(6 * 7)"),
        nbformat.v4.new_markdown_cell("## Glossary\n\n| term | 中文 |\n|---|---|\n| mantissa | 尾数 |")])
    figure = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 01 — B"),
        nbformat.v4.new_code_cell("%matplotlib inline\nfrom matplotlib.figure import Figure\nf = Figure(); f.add_subplot().plot([1, 2]); f")])
    nbformat.write(welcome, folder / "00_a.ipynb")
    nbformat.write(figure, folder / "01_b.ipynb")
    out, executed = tmp_path / "book", tmp_path / "executed"
    times = book.build(out, jobs=2, folder=folder, keep_executed=executed)
    assert set(times) == {"00_a.ipynb", "01_b.ipynb"} and all(t > 0 for t in times.values())
    assert nbformat.read(executed / "00_a.ipynb", as_version=4).cells[1].outputs[0].text == "42\n"
    page = (out / "01_b.html").read_text(encoding="utf-8")
    assert len(re.findall(r'<img[^>]+src="data:image/png;', page)) == 1
    assert 'href="01_b.html"' in (out / "00_a.html").read_text(encoding="utf-8")
    assert "尾数" in (out / "glossary.html").read_text(encoding="utf-8")
    assert not any(folder.glob("*.html")) and not nbformat.read(folder / "00_a.ipynb", as_version=4).cells[1].outputs


# --- the whole book (kernel) --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory, course_cache):
    """The book built by tools/book.py into a temporary folder: (book folder, executed notebooks, chapter files).

    The chapters go through the run's cache of executed chapters (``--cache``): the notebook tests, scheduled
    before this, have executed most of them; the rest are executed here (one kernel per pytest worker). The
    five tests that use it are one scheduling unit (``SHARED_FIXTURE_UNITS`` in tests/conftest.py): one worker
    builds the book for all of them.
    """
    names = chapter_files()
    out = tmp_path_factory.mktemp("book") / "book"
    executed = out.parent / "executed"
    jobs = "1" if os.environ.get("PYTEST_XDIST_WORKER") else "2"
    t = time.monotonic()
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "book.py"), "--out", str(out), "--jobs", jobs,
                          "--keep-executed", str(executed), "--cache", str(course_cache),
                          "--cell-timeout", str(CELL_TIMEOUT_S)], capture_output=True, text=True, timeout=1500, cwd=ROOT)
    assert run.returncode == 0, f"tools/book.py failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    print(f"\nbook built in {time.monotonic() - t:.0f} s:\n{run.stdout}")
    built_names = sorted(p.name for p in executed.glob("*.ipynb"))
    assert set(names) <= set(built_names), f"chapters missing from the book: {sorted(set(names) - set(built_names))}"
    return out, executed, built_names


def pages(out: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in out.glob("*.html")}


HREF = re.compile(r'href="([^"]*)"')
IDS = re.compile(r'\bid="([^"]*)"')


@pytest.mark.kernel
def test_the_contents_page_lists_every_chapter_in_order(built):
    out, executed, names = built
    index = (out / "index.html").read_text(encoding="utf-8")
    hrefs = [h for h in HREF.findall(index) if CHAPTER.match(h.replace(".html", ".ipynb"))]
    assert hrefs == [n.replace(".ipynb", ".html") for n in names]
    for name in names:
        nb = nbformat.read(executed / name, as_version=4)  # the version the book was built from
        title = nb.cells[0].source.lstrip().splitlines()[0].lstrip("# ").strip()
        assert html.escape(title) in index, f"the contents page lacks the title of {name}: {title!r}"
        assert (out / name.replace(".ipynb", ".html")).is_file()
    assert "`" not in index, "a hook's markdown (a code span) was not rendered on the contents page"


@pytest.mark.kernel
def test_every_chapter_page_carries_its_figures_inline(built):
    out, executed, names = built
    from fp8lab.course.execute import figure_count

    for name in names:
        page = (out / name.replace(".ipynb", ".html")).read_text(encoding="utf-8")
        inline = len(re.findall(r'<img[^>]+src="data:image/(?:png|svg\+xml)[;,]', page))
        expected = figure_count(nbformat.read(executed / name, as_version=4))
        assert expected >= 1, f"{name} draws no figure"
        assert inline == expected, f"{name}: {inline} inline images on the page, {expected} figures in the executed notebook"
        assert not re.search(r'<img[^>]+src="(?!data:)', page), f"{name}: an image is not inlined"


@pytest.mark.kernel
def test_links_between_chapters_resolve_inside_the_book(built):
    out, _, names = built
    all_pages = pages(out)
    # nbconvert percent-encodes non-ASCII heading ids (an em dash is %E2%80%94): compare both spellings
    ids = {name: {v for i in IDS.findall(text) for v in (i, unquote(i))} for name, text in all_pages.items()}
    present = {n[:2]: n for n in names}
    unwritten = []
    for name, text in all_pages.items():
        for href in HREF.findall(text):
            parts = urlsplit(html.unescape(href))
            if parts.scheme or parts.netloc or not parts.path:
                if not parts.scheme and not parts.netloc and parts.fragment:  # same-page anchor
                    assert unquote(parts.fragment) in ids[name], f"{name}: anchor #{parts.fragment} is not on the page"
                continue
            target = Path(unquote(parts.path)).name
            assert not target.endswith(".ipynb"), f"{name}: a link to {target} was not rewritten to .html"
            if not target.endswith(".html"):
                continue
            if target not in all_pages:
                m = CHAPTER.match(target.replace(".html", ".ipynb"))
                assert m, f"{name}: link to {target}, which is not in the book"
                assert m.group(1) not in present, (f"{name}: link to {target}, but chapter {m.group(1)} is "
                                                   f"{present.get(m.group(1))} (a rename broke the link)")
                unwritten.append(f"{name} -> {target}")
                continue
            if parts.fragment:
                assert unquote(parts.fragment) in ids[target], f"{name}: {target}#{parts.fragment}: no such anchor"
    if unwritten:
        print("\nlinks to chapters not written yet:", sorted(set(unwritten)))


@pytest.mark.kernel
def test_pages_show_no_widget_reprs_and_load_nothing_from_a_cdn(built):
    out, _, names = built
    for name, text in pages(out).items():
        assert "interactive(children=" not in text and "VBox(children=" not in text, name
        assert "@jupyter-widgets/html-manager" not in text, f"{name} would fetch a widget manager"
        for src in re.findall(r"<script[^>]*\bsrc=[\"']([^\"']+)", text):
            assert "://" not in src and not src.startswith("//"), f"{name} loads {src} from the network"
            local = out / src.split("?")[0]
            assert local.is_file(), f"{name} loads {src}, which the book does not contain"
            for cfg in (src.split("config=")[1].split("&")[0].split(",") if "config=" in src else []):
                assert (local.parent / "config" / f"{cfg}.js").is_file(), f"{name}: MathJax config {cfg} missing"
        assert 'class="jp-Mermaid' not in text, f"{name} has a diagram, whose renderer comes from a CDN"
        if "$" in text or "\\(" in text:
            assert "mathjax/MathJax.js" in text, f"{name} has maths but no local MathJax"


@pytest.mark.kernel
def test_the_glossary_from_the_welcome_chapter_is_in_the_book(built):
    out, _, names = built
    if "00_welcome.ipynb" not in names:
        pytest.skip("no 00_welcome.ipynb yet: nothing to take the glossary from")
    index = (out / "index.html").read_text(encoding="utf-8")
    glossary = (out / "glossary.html").read_text(encoding="utf-8")
    for term in GLOSSARY_TERMS:
        assert term in index and term in glossary, f"the glossary lacks {term}"
    assert glossary.count("<tr") >= 10 or glossary.count("<li") >= 10, "the glossary has fewer than ten entries"


# --- the Chinese edition (make book LANG=zh) ----------------------------------------------------------------------

def _fake_executed_course(tmp_path: Path) -> tuple[Path, Path]:
    """Two chapters, their "executed" versions (a stream output and a figure with its Chinese rendering in the
    metadata, as the kernel's figure hook stores it) and a Chinese catalogue: no kernel needed."""
    from fp8lab.course.edition import catalogue_toml
    from fp8lab.course.figtext import META_KEY

    folder, executed = tmp_path / "notebooks", tmp_path / "executed"
    (folder / "zh").mkdir(parents=True)
    executed.mkdir()
    png_en = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    png_zh = png_en.replace("ADUlEQVR42mNk", "ADUlEQVR42mNl")
    nbs = {"00_a": nbformat.v4.new_notebook(cells=[
               nbformat.v4.new_markdown_cell("# 00 — A\n\n> Why `a`?\n\n[next](01_b.ipynb), maths $2^{-9}$\n\n"
                                             "## Course map\n\nThe map.", id="m0"),
               nbformat.v4.new_code_cell("print(6 * 7)", id="k0")]),
           "01_b": nbformat.v4.new_notebook(cells=[
               nbformat.v4.new_markdown_cell("# 01 — B\n\nThe figure below; [the map](00_a.ipynb#Course-map).", id="m1"),
               nbformat.v4.new_code_cell("f", id="k1")])}
    zh = {"00_a": {"m0": "# 00 — 甲\n\n> 为什么是 `a`？\n\n[下一章](01_b.ipynb)，数学 $2^{-9}$\n\n## 课程地图\n\n地图。"},
          "01_b": {"m1": "# 01 — 乙\n\n下面的图；[课程地图](00_a.ipynb#Course-map)。"}}
    for stem, nb in nbs.items():
        nbformat.write(nb, folder / f"{stem}.ipynb")
        (folder / "zh" / f"{stem}.toml").write_text(catalogue_toml(nb, stem, zh[stem]), encoding="utf-8")
    nbs["00_a"].cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="42\n")]
    nbs["01_b"].cells[1].outputs = [nbformat.v4.new_output("display_data", data={"image/png": png_en, "text/plain": "F"},
                                                           metadata={META_KEY: {"zh": {"image/png": png_zh}}})]
    for stem, nb in nbs.items():
        nbformat.write(nb, executed / f"{stem}.ipynb")
    return folder, executed


def test_the_chinese_book_is_made_from_the_same_executed_chapters(tmp_path):
    folder, executed = _fake_executed_course(tmp_path)
    out = tmp_path / "book"
    book.build(out, executed=executed, folder=folder)
    book.build(out / "zh", executed=executed, folder=folder, lang="zh")
    index = (out / "zh" / "index.html").read_text(encoding="utf-8")
    assert "00 — 甲" in index and "01 — 乙" in index and "目录" in index and "lang='zh-CN'" in index
    for term in GLOSSARY_TERMS:  # the glossary from the term base
        assert term in index and term in (out / "zh" / "glossary.html").read_text(encoding="utf-8")
    en_page, zh_page = ((out / sub / "01_b.html").read_text(encoding="utf-8") for sub in (".", "zh"))
    en_img, zh_img = (re.findall(r'<img[^>]+src="data:image/png;base64,([^"]+)"', p) for p in (en_page, zh_page))
    assert len(en_img) == len(zh_img) == 1 and en_img != zh_img and "ADUlEQVR42mNl" in zh_img[0]
    assert "下面的图" in zh_page and "The figure below" not in zh_page and '<html lang="zh-CN"' in zh_page
    assert 'href="01_b.html"' in (out / "zh" / "00_a.html").read_text(encoding="utf-8")  # links stay in the edition
    assert 'href="00_a.html#Course-map"' in zh_page  # and so do anchors: the Chinese heading carries the English one
    assert 'id="Course-map"' in (out / "zh" / "00_a.html").read_text(encoding="utf-8")
    assert "42" in (out / "zh" / "00_a.html").read_text(encoding="utf-8")  # outputs shared
    book.build(out, executed=executed, folder=folder)  # rebuilding the English book keeps the Chinese one
    assert (out / "zh" / "index.html").is_file() and (out / "index.html").is_file()
    assert not any(folder.glob("*.html"))


def test_every_page_asks_mathjax_only_for_fonts_the_book_ships(tmp_path):
    """MathJax's default output font (TeX) is not in the pinned package: every page logged a missing font file."""
    folder, executed = _fake_executed_course(tmp_path)
    out = tmp_path / "book"
    book.build(out, executed=executed, folder=folder)
    shipped = book.mathjax_font_folders(out / "mathjax")
    assert shipped == ["STIX-Web"]
    page = (out / "00_a.html").read_text(encoding="utf-8")
    config, loader = page.find(book.MATHJAX_FONTS), page.find('src="mathjax/MathJax.js')
    assert 0 <= config < loader, "the font configuration must come before MathJax loads"
    for name in re.findall(r'(?:preferredFont|webFont|font): "([^"]+)"', book.MATHJAX_FONTS):
        assert name in shipped and (out / "mathjax" / "jax" / "output" / "HTML-CSS" / "fonts" / name).is_dir()
    assert "availableFonts: [\"STIX-Web\"]" in book.MATHJAX_FONTS and "imageFont: null" in book.MATHJAX_FONTS


@pytest.mark.parametrize("args, env_lang, edition", [
    (["LANG=zh"], "en_US.UTF-8", "zh"), ([], "zh_CN.UTF-8", "en"), ([], "zh", "en"), (["LANG=en"], "C", "en"),
    (["LANG=zh-CN"], "C.UTF-8", "zh"), (["LANG=ZH"], "en_GB.UTF-8", "zh"), (["LANG=zh_CN.UTF-8"], "", "zh"),
    (["LANG=en_US.UTF-8"], "zh_CN.UTF-8", "en")])
def test_make_takes_the_edition_from_its_command_line_never_from_the_locale(args, env_lang, edition):
    env = {**os.environ, "LANG": env_lang}
    for target, expect in (("book", f"--lang {edition}"), ("lab", f"--lang {edition}")):
        run = subprocess.run(["make", "-n", target, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
        lines = run.stdout.replace("\\\n", " ").splitlines()
        cmd = next(line for line in lines if "tools/book.py" in line or "fp8lab.course.lab" in line)
        assert expect in cmd, (target, args, env_lang, cmd)
        assert ("env -u LANG" in cmd) == bool(args), cmd
        if target == "book":
            assert ("--out build/book/zh" in cmd) == (edition == "zh") and "--cache build/executed" in run.stdout


@pytest.mark.kernel
def test_the_chinese_book_has_every_chapter_its_figures_and_its_links_from_the_same_executions(built, course_cache):
    """``make book LANG=zh`` on the run's cache after the English book: nothing is executed again (no new cache
    entry), every chapter page has as many inline figures as the English one, in Chinese, and links stay inside."""
    from fp8lab.course.execute import cache_key, source_digest

    out, _, names = built
    digest = source_digest()
    # the English book's executions are in the cache unless the library changed since (another edit meanwhile)
    current = all((course_cache / f"{n[:-6]}-{cache_key(NOTEBOOKS / n, cell_timeout=CELL_TIMEOUT_S, sources=digest)[:24]}.ipynb")
                  .is_file() for n in names)
    entries = sorted(p.name for p in course_cache.glob("*.ipynb"))
    t = time.monotonic()
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "book.py"), "--out", str(out / "zh"), "--jobs", "1",
                          "--cache", str(course_cache), "--cell-timeout", str(CELL_TIMEOUT_S), "--lang", "zh"],
                         capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert run.returncode == 0, f"tools/book.py --lang zh failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    print(f"\nChinese book built in {time.monotonic() - t:.0f} s")
    if current and source_digest() == digest:
        assert sorted(p.name for p in course_cache.glob("*.ipynb")) == entries, "the Chinese book executed a chapter again"
    else:
        print("the library changed while the tests ran: the Chinese book executed the changed chapters itself")
    zh = out / "zh"
    index = (zh / "index.html").read_text(encoding="utf-8")
    for name in names:
        page_name = name.replace(".ipynb", ".html")
        en_page, zh_page = (out / page_name).read_text(encoding="utf-8"), (zh / page_name).read_text(encoding="utf-8")
        images = [re.findall(r'<img[^>]+src="data:image/(?:png|svg\+xml)[;,]([^"]{0,200})', p) for p in (en_page, zh_page)]
        assert len(images[1]) == len(images[0]) >= 1, f"{name}: {len(images[1])} figures in Chinese, {len(images[0])} in English"
        assert images[1] != images[0], f"{name}: the Chinese page shows the English figures"
        assert '<html lang="zh-CN"' in zh_page and re.search(r"[\u4e00-\u9fff]", zh_page)
        for src in re.findall(r"<script[^>]*\bsrc=[\"']([^\"']+)", zh_page):
            assert "://" not in src and (zh / src.split("?")[0]).is_file(), f"{name} loads {src}"
        for href in HREF.findall(zh_page):
            parts = urlsplit(html.unescape(href))
            if not parts.scheme and parts.path.endswith(".html") and not parts.path.startswith(".."):
                target = zh / Path(unquote(parts.path)).name
                assert target.is_file(), (name, href)
                if parts.fragment and CHAPTER.match(target.name.replace(".html", ".ipynb")):
                    ids = {v for i in IDS.findall(target.read_text(encoding="utf-8")) for v in (i, unquote(i))}
                    assert unquote(parts.fragment) in ids, f"{name}: {href}: no such anchor in the Chinese book"
        assert f'href="{page_name}"' in index
    for term in GLOSSARY_TERMS:
        assert term in index
