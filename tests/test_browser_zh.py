"""The Chinese edition in a real browser: `make lab LANG=zh` and headless Chromium (helpers of tests/test_browser.py).

`make lab LANG=zh` runs as a learner runs it (a PATH without the venv, the repository as the server's root,
the working copy in a scratch folder under the git-ignored ``build/``); the test opens the Chinese welcome
chapter, follows its link to chapter 03, runs chapter 03 with Run All Cells, and sees its text, its widgets'
labels and its figures in Chinese: the kernels of the Chinese copy run with ``FP8LAB_LANG=zh``. One server
and one browser serve both tests. Skips, saying so, without Chromium.
"""

from __future__ import annotations

import re
import time
import urllib.parse
import urllib.request

import pytest



def _english_browser_test():
    """tests/test_browser.py as a module (its helpers; its fixtures stay there, so its server is not started)."""
    import importlib.util
    import sys
    from pathlib import Path

    name = "fp8lab_test_browser_helpers"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("test_browser.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_en = _english_browser_test()
CHAPTER, ROOT, WELCOME, RUN_ALL_BUDGET_S = _en.CHAPTER, _en.ROOT, _en.WELCOME, _en.RUN_ALL_BUDGET_S
click_menu, dom_texts, kernel_idle, open_notebook, panel, wait_for = (
    _en.click_menu, _en.dom_texts, _en.kernel_idle, _en.open_notebook, _en.panel, _en.wait_for)

pytestmark = pytest.mark.browser
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def lab_zh(tmp_path_factory):
    """``make lab LANG=zh`` on a scratch copy; yields (base URL, token, working copy, the printed URL, the output)."""
    yield from _en.started_make_lab(tmp_path_factory, lang="zh")


@pytest.fixture(scope="module")
def browser_zh(lab_zh, tmp_path_factory):
    yield from _en.started_chromium(tmp_path_factory.mktemp("chromium-profile-zh"))


def test_the_chinese_welcome_chapter_opens_and_links_within_the_edition(lab_zh, browser_zh):
    from selenium.webdriver.common.by import By

    base, token, copy, url, _ = lab_zh
    assert (copy / WELCOME).is_file() and (copy / CHAPTER).is_file()
    open_notebook(browser_zh, url, WELCOME)
    heading = wait_for(browser_zh, lambda d: dom_texts(d, ".jp-MarkdownOutput h1"), 30, "the welcome chapter's title")
    assert CJK.search(heading[0]), f"the welcome chapter's title is not Chinese: {heading[0]!r}"

    def links_to_chapter(d):
        return [a for a in panel(d).find_elements(By.CSS_SELECTOR, ".jp-MarkdownOutput a")
                if (a.get_attribute("href") or "").split("?")[0].split("#")[0].endswith(CHAPTER)]

    links = wait_for(browser_zh, links_to_chapter, 30, f"the Chinese welcome chapter's link to {CHAPTER}")
    href = links[0].get_attribute("href")
    assert "/my_course_zh/" in urllib.parse.unquote(href), f"the link leaves the Chinese copy: {href}"
    browser_zh.execute_script("arguments[0].scrollIntoView({block: 'center'});", links[0])
    links[0].click()
    wait_for(browser_zh, lambda d: any(t.text.strip() == CHAPTER for t in d.find_elements(By.CSS_SELECTOR, ".lm-TabBar-tabLabel")),
             60, f"the link to open {CHAPTER} in a tab")


def test_chapter_03_runs_in_chinese_with_chinese_widgets_and_figures(lab_zh, browser_zh):
    from selenium.webdriver.common.by import By

    import nbformat

    from fp8lab.course.figtext import META_KEY

    base, token, copy, url, _ = lab_zh
    open_notebook(browser_zh, url.replace(WELCOME, CHAPTER), CHAPTER)
    saved = copy / CHAPTER
    n_code = sum(c.cell_type == "code" for c in nbformat.read(saved, as_version=4).cells)
    click_menu(browser_zh, "Run", "Run All Cells")

    def saved_after_run(d):
        if not kernel_idle(d):
            return None
        click_menu(d, "File", "Save Notebook")
        time.sleep(1.0)
        nb = nbformat.read(saved, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        failed = any(o.output_type == "error" for c in code for o in c.outputs)
        return nb if failed or all(c.execution_count is not None for c in code) else None

    nb = wait_for(browser_zh, saved_after_run, RUN_ALL_BUDGET_S, f"Run All Cells to finish {CHAPTER} ({n_code} code cells)")
    code = [c for c in nb.cells if c.cell_type == "code"]
    raised = [f"{o.ename}: {o.evalue}" for c in code for o in c.outputs if o.output_type == "error"]
    assert not raised, f"cells of the Chinese {CHAPTER} raised after Run All: {raised}"
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert sum(bool(CJK.search(m)) for m in markdown) >= len(markdown) - 1, "the chapter's text is not Chinese"
    figures = [o for c in code for o in c.outputs if "image/png" in o.get("data", {})]
    assert figures, f"{CHAPTER} shows no figure"
    for o in figures:  # a Chinese kernel shows the Chinese rendering and keeps the English one aside
        meta = o.get("metadata", {}).get(META_KEY, {})
        assert "en" in meta and meta.get("missing_glyphs") == [], meta.get("error", meta.get("missing_glyphs"))
    views = wait_for(browser_zh, lambda d: panel(d).find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output .jupyter-widgets"),
                     60, f"a widget to render in the Chinese {CHAPTER}")
    texts = " ".join(dom_texts(browser_zh, ".jp-OutputArea-output .jupyter-widgets"))
    assert "符号位" in texts and "尾数" in texts, f"the bit flipper's labels are not Chinese: {texts[:300]!r}"
    button = wait_for(browser_zh, lambda d: next((b for b in panel(d).find_elements(By.CSS_SELECTOR, ".widget-toggle-button")
                                                  if b.is_displayed()), None), 30, "a toggle button (the bit flipper)")
    box = button.find_element(By.XPATH, "./ancestor::div[contains(@class, 'widget-vbox')][1]")
    before = box.text
    browser_zh.execute_script("arguments[0].scrollIntoView({block: 'center'});", button)
    button.click()
    wait_for(browser_zh, lambda d: box.text != before and "字段" in box.text, 30, "the bit flipper to answer in Chinese")
    print(f"\nChinese {CHAPTER}: {len(figures)} figures in Chinese, {len(views)} widget views")
