"""The Chinese edition in a real browser: `make lab LANG=zh` and headless Chromium (helpers of tests/test_browser.py).

`make lab LANG=zh` runs as a learner runs it (a PATH without the venv, the repository as the server's root,
the working copy in a scratch folder under the git-ignored ``build/``); the test opens the Chinese welcome
chapter, follows its link to chapter 03, runs chapter 03 with Run All Cells, and sees its text, its widgets'
labels and its figures in Chinese: the kernels of the Chinese copy run with ``FP8LAB_LANG=zh``. One server
and one browser serve both tests. Skips, saying so, without Chromium.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
import uuid

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
CHROME_FLAGS, CHROMIUM, CHAPTER, DRIVER, ROOT, WELCOME = (_en.CHROME_FLAGS, _en.CHROMIUM, _en.CHAPTER, _en.DRIVER, _en.ROOT,
                                                          _en.WELCOME)
RUN_ALL_BUDGET_S = _en.RUN_ALL_BUDGET_S
click_menu, dom_texts, kernel_idle, open_notebook, panel, user_path, wait_for = (
    _en.click_menu, _en.dom_texts, _en.kernel_idle, _en.open_notebook, _en.panel, _en.user_path, _en.wait_for)

pytestmark = pytest.mark.browser
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def lab_zh(tmp_path_factory):
    """``make lab LANG=zh`` on a scratch copy; yields (base URL, token, working copy, the printed URL, the output)."""
    if CHROMIUM is None or DRIVER is None:
        pytest.skip("no headless browser here: install the Debian packages chromium and chromium-driver")
    pytest.importorskip("selenium", reason="selenium is not installed (`make venv` installs the pinned version)")
    if shutil.which("make") is None:
        pytest.skip("make is not installed: the browser test starts JupyterLab with `make lab LANG=zh`")
    tmp = tmp_path_factory.mktemp("lab-zh")
    scratch = ROOT / "build" / f"browser-test-zh-{uuid.uuid4().hex[:8]}"
    copy = scratch / "my_course_zh"
    token = "fp8lab-browser-test-zh"
    args = f"--copy {copy} --no-browser --ip=127.0.0.1 --IdentityProvider.token={token}"
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), JUPYTER_CONFIG_DIR=str(tmp / "config"),
               JUPYTER_DATA_DIR=str(tmp / "data"), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               FP8LAB_GRADING_DIR=str(tmp / "grading"), FP8LAB_MY_LABS_DIR=str(scratch / "my_labs"),
               LANG="en_US.UTF-8")  # a learner's locale: only LANG=zh on make's command line picks the edition
    env["PATH"] = user_path(env.get("PATH", "") or "/usr/bin:/bin")
    for name in ("VIRTUAL_ENV", "JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "PYTHONPATH", "FP8LAB_LANG"):
        env.pop(name, None)
    out_path = tmp / "make-lab.out"
    out = open(out_path, "w")
    proc = subprocess.Popen(["make", "--no-print-directory", "-C", str(ROOT), "lab", "LANG=zh", f"ARGS={args}"],
                            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        url = None
        while url is None:
            text = out_path.read_text(errors="replace")
            m = re.search(r"fp8lab course: open (\S+)", text)
            if m:
                url = m.group(1)
            elif proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"make lab LANG=zh did not print the line to open:\n{text[-3000:]}")
            else:
                time.sleep(0.5)
        parts = urllib.parse.urlsplit(url)
        assert parts.path.endswith(f"/my_course_zh/{WELCOME}") and f"token={token}" in parts.query, url
        base = f"{parts.scheme}://{parts.netloc}"
        urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=10)
        yield base, token, copy, url, text
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out.close()
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="module")
def browser_zh(lab_zh, tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile-zh')}")
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


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
