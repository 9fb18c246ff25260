"""The course in a real browser: JupyterLab started by `make lab`, headless Chromium driven by selenium.

`make lab` runs as a learner runs it: from a shell whose PATH does not hold the venv's ``bin/`` (every
PATH entry with an ``alembic`` or ``jupyter`` executable is removed), with the repository as the
server's root, a working copy in a scratch folder under the git-ignored ``build/`` (``--copy``) and a
fresh gradebook and exchange (``FP8LAB_GRADING_DIR``). It prints the URL to open; the test opens the
Formgrader and the Assignments panel from the Nbgrader menu on this first use and sees every lab listed,
opens the welcome chapter, follows its link to chapter 03, runs it with Run > Run All Cells, finds no
error output, and checks that the widgets render as widgets (not "Loading widget..." and not their text
repr) and answer a click and a slider. One server and one browser serve every test of the module.

Needs the Debian packages ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them) and
selenium (pinned in requirements.txt); without a browser it skips and says so. Chromium runs as root
here, so it gets ``--no-sandbox`` and a fresh profile; the network is closed, so everything that
would phone home is switched off.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.browser  # both tests run on one worker (SHARED_FIXTURE_UNITS in tests/conftest.py)

WELCOME, CHAPTER = "00_welcome.ipynb", "03_fp8.ipynb"
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
DRIVER = shutil.which("chromedriver")
RUN_ALL_BUDGET_S = 240  # the chapter runs in well under a minute; this catches a hang


def user_path(path: str) -> str:
    """``path`` without the folders a learner's shell lacks before activating the venv: this interpreter's
    ``bin/`` and any folder holding ``alembic`` or ``jupyter`` (nbgrader runs ``alembic`` by name)."""
    keep = []
    for entry in path.split(os.pathsep):
        if not entry or Path(entry) == Path(sys.executable).parent:
            continue
        if any((Path(entry) / tool).exists() for tool in ("alembic", "jupyter")):
            continue
        keep.append(entry)
    return os.pathsep.join(keep)


CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--disable-extensions", "--window-size=1400,1000"]


def started_make_lab(tmp_path_factory, *, lang: str | None = None):
    """Run ``make lab`` (``LANG=zh`` too when ``lang``) as a learner would, on a scratch working copy, a fresh
    gradebook and a PATH without the venv; yields (base URL, token, working copy, the printed URL, the output)
    and stops the server and its kernels afterwards. Both browser modules' fixtures are this generator."""
    if CHROMIUM is None or DRIVER is None:
        pytest.skip("no headless browser here: install the Debian packages chromium and chromium-driver "
                    "(`apt-get install chromium chromium-driver`, as .ci/run does) to run the browser test")
    pytest.importorskip("selenium", reason="selenium is not installed (`make venv` installs the pinned version)")
    for name in (WELCOME, CHAPTER):
        if not (ROOT / "notebooks" / name).exists():
            pytest.fail(f"notebooks/{name} is missing: the browser test opens {WELCOME} and runs {CHAPTER}")
    if shutil.which("make") is None:
        pytest.skip("make is not installed: the browser test starts JupyterLab with `make lab`")
    suffix = f"-{lang}" if lang else ""
    tmp = tmp_path_factory.mktemp("lab" + suffix)
    # the server's root is the repository, as for a learner (nbgrader's Formgrader refuses a course folder
    # outside it); the working copy and fetched labs go to a scratch folder under the git-ignored build/
    scratch = ROOT / "build" / f"browser-test{suffix}-{uuid.uuid4().hex[:8]}"
    copy = scratch / ("my_course" + (f"_{lang}" if lang else ""))
    token = "fp8lab-browser-test" + suffix
    args = f"--copy {copy} --no-browser --ip=127.0.0.1 --IdentityProvider.token={token}"
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), JUPYTER_CONFIG_DIR=str(tmp / "config"),
               JUPYTER_DATA_DIR=str(tmp / "data"), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               FP8LAB_GRADING_DIR=str(tmp / "grading"), FP8LAB_MY_LABS_DIR=str(scratch / "my_labs"))
    if lang:
        env["LANG"] = "en_US.UTF-8"  # a learner's locale: only LANG=zh on make's command line picks the edition
    env["PATH"] = user_path(env.get("PATH", "") or "/usr/bin:/bin")
    for name in ("VIRTUAL_ENV", "JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "PYTHONPATH", "FP8LAB_LANG"):
        env.pop(name, None)
    out_path = tmp / "make-lab.out"
    out = open(out_path, "w")
    command = ["make", "--no-print-directory", "-C", str(ROOT), "lab", *([f"LANG={lang}"] if lang else []), f"ARGS={args}"]
    proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        url = None
        while url is None:
            text = out_path.read_text(errors="replace")
            m = re.search(r"fp8lab course: open (\S+)", text)
            if m:
                url = m.group(1)
            elif proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{' '.join(command[4:-1])} did not print the line to open:\n{text[-3000:]}")
            else:
                time.sleep(0.5)
        parts = urllib.parse.urlsplit(url)
        assert parts.path.endswith(f"/{copy.name}/{WELCOME}") and f"token={token}" in parts.query, url
        base = f"{parts.scheme}://{parts.netloc}"
        urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=10)
        yield base, token, copy, url, text
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # make lab stops JupyterLab and its kernels on SIGTERM
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out.close()
        shutil.rmtree(scratch, ignore_errors=True)


def started_chromium(profile: Path):
    """Headless Chromium through its driver with a fresh ``profile`` folder; yields the driver, quits it after."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """``make lab`` on a temporary root: it makes the working copy there and prints the URL; yields
    (base URL, token, working copy, the printed URL, the output)."""
    yield from started_make_lab(tmp_path_factory)


@pytest.fixture(scope="module")
def browser(lab, tmp_path_factory):
    yield from started_chromium(tmp_path_factory.mktemp("chromium-profile"))


def wait_for(driver, condition, timeout: float, what: str):
    """Poll ``condition(driver)`` until it returns something truthy; fail saying ``what`` did not happen."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = condition(driver)
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - stale elements while JupyterLab re-renders
            last_error = e
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}" + (f" (last error: {last_error})" if last_error else ""))


def panel(driver):
    """The notebook panel JupyterLab shows (the current tab)."""
    from selenium.webdriver.common.by import By

    panels = [p for p in driver.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel") if p.is_displayed()]
    return panels[-1] if panels else None


def current_tab(driver) -> str | None:
    """The label of the main area's current tab."""
    labels = driver.execute_script(
        "return Array.from(document.querySelectorAll('#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current "
        ".lm-TabBar-tabLabel')).map(e => e.textContent);")
    return labels[0].strip() if labels else None


def kernel_idle(driver) -> bool:
    from selenium.webdriver.common.by import By

    p = panel(driver)
    if p is None:
        return False
    status = p.find_elements(By.CSS_SELECTOR, ".jp-Notebook-ExecutionIndicator")
    return bool(status) and status[0].get_attribute("data-status") == "idle"


def open_notebook(driver, url: str, name: str):
    """Open ``url`` (a /lab/tree/... URL with its token) in a fresh workspace and wait for ``name``'s kernel."""
    from selenium.webdriver.common.by import By

    driver.get(url + "&reset")  # reset: a fresh workspace that shows this document only
    wait_for(driver, lambda d: current_tab(d) == name and panel(d) is not None
             and panel(d).find_elements(By.CSS_SELECTOR, ".jp-Cell"), 90, f"JupyterLab to show {name}")
    wait_for(driver, kernel_idle, 90, f"the kernel of {name} to start")


def click_menu(driver, menu: str, item: str) -> None:
    from selenium.webdriver.common.by import By

    top = wait_for(driver, lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-itemLabel")
                                           if e.text.strip() == menu), None), 30, f"the {menu} menu")
    top.click()
    entry = wait_for(driver, lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, ".lm-Menu-itemLabel")
                                             if e.text.strip() == item and e.is_displayed()), None), 30,
                     f"the {menu} > {item} menu item")
    entry.click()


CURRENT = ".jp-NotebookPanel:not(.lm-mod-hidden)"


def dom_texts(driver, selector: str) -> list[str]:
    """``textContent`` of every element matching ``selector`` in the current notebook, on screen or not
    (JupyterLab skips rendering off-screen cells, so selenium's ``.text`` would read them as empty)."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.textContent);",
        f"{CURRENT} {selector}")


def code_prompts(driver) -> list[str]:
    return [t.strip() for t in dom_texts(driver, ".jp-CodeCell .jp-InputPrompt")]


def test_the_welcome_chapter_opens_and_links_to_chapter_03(lab, browser):
    from selenium.webdriver.common.by import By

    base, token, copy, url, _ = lab
    open_notebook(browser, url, WELCOME)
    heading = wait_for(browser, lambda d: dom_texts(d, ".jp-MarkdownOutput h1"), 30, "the welcome chapter's title")
    assert "Welcome" in heading[0]

    def links_to_chapter(d):
        return [a for a in panel(d).find_elements(By.CSS_SELECTOR, ".jp-MarkdownOutput a")
                if (a.get_attribute("href") or "").split("?")[0].split("#")[0].endswith(CHAPTER)]

    links = wait_for(browser, links_to_chapter, 30, f"the welcome chapter's link to {CHAPTER}")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", links[0])
    links[0].click()
    wait_for(browser, lambda d: any(t.text.strip() == CHAPTER for t in d.find_elements(By.CSS_SELECTOR, ".lm-TabBar-tabLabel")),
             60, f"the link to open {CHAPTER} in a tab")


def test_chapter_03_runs_all_cells_without_errors_and_its_widgets_respond(lab, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    base, token, course, url, _ = lab
    open_notebook(browser, url.replace(WELCOME, CHAPTER), CHAPTER)
    import nbformat

    saved = course / CHAPTER
    n_code = sum(c.cell_type == "code" for c in nbformat.read(saved, as_version=4).cells)
    assert n_code > 0
    started = time.monotonic()
    click_menu(browser, "Run", "Run All Cells")

    def saved_after_run(d):
        # save whenever the kernel is idle; done when the saved copy has every code cell executed
        # (the copy is the test's own, not the course)
        if not kernel_idle(d):
            return None
        click_menu(d, "File", "Save Notebook")
        time.sleep(1.0)
        nb = nbformat.read(saved, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        failed = any(o.output_type == "error" for c in code for o in c.outputs)  # Run All stops at an error
        return nb if failed or all(c.execution_count is not None for c in code) else None

    nb = wait_for(browser, saved_after_run, RUN_ALL_BUDGET_S, f"Run All Cells to finish {CHAPTER} ({n_code} code cells)")
    seconds = time.monotonic() - started
    code = [c for c in nb.cells if c.cell_type == "code"]
    raised = [f"{c.source.splitlines()[0]!r}: {o.ename}: {o.evalue}" for c in code for o in c.outputs if o.output_type == "error"]
    assert not raised, f"cells of {CHAPTER} raised after Run All: {raised}"
    widget_outputs = sum(1 for c in code for o in c.outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {}))
    assert widget_outputs, f"{CHAPTER} displays no widget"

    wait_for(browser, lambda d: len(code_prompts(d)) == n_code and all(re.fullmatch(r"\[\d+\]:", t) for t in code_prompts(d)),
             60, f"all {n_code} code cells of {CHAPTER} to show their execution count")
    errors = dom_texts(browser, '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]')
    tracebacks = [t[:300] for t in dom_texts(browser, ".jp-OutputArea-output") if "Traceback" in t]
    assert not errors and not tracebacks, f"{CHAPTER} shows errors after Run All: {[t[:300] for t in errors] or tracebacks}"

    views = wait_for(browser, lambda d: panel(d).find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output .jupyter-widgets"),
                     60, f"a widget to render in {CHAPTER}")
    texts = " ".join(dom_texts(browser, ".jp-OutputArea-output"))
    assert "Loading widget" not in texts, "a widget never loaded (the widget manager is missing?)"
    for repr_start in ("interactive(children=", "VBox(children=", "HBox(children="):
        assert repr_start not in texts, f"a widget shows its text repr ({repr_start}...) instead of rendering"

    # a click: the first toggle button flips, and the text beside it follows
    button = wait_for(browser, lambda d: next((b for b in panel(d).find_elements(By.CSS_SELECTOR, ".widget-toggle-button")
                                               if b.is_displayed()), None), 30, "a toggle button (the bit flipper)")
    box = button.find_element(By.XPATH, "./ancestor::div[contains(@class, 'widget-vbox')][1]")
    before = box.text
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", button)
    button.click()
    wait_for(browser, lambda d: box.text != before, 30, "the bit flipper to answer a click")

    # a slider: arrow keys move its handle, the readout and the output follow
    sliders = browser.execute_script("return document.querySelectorAll(arguments[0]).length;",
                                     f"{CURRENT} .jp-OutputArea-output .widget-slider")
    assert sliders, f"{CHAPTER} shows no slider widget: the browser test checks that a click and a slider both respond"
    handle = wait_for(browser, lambda d: next((h for h in panel(d).find_elements(By.CSS_SELECTOR, ".widget-slider .noUi-handle")
                                               if h.is_displayed()), None), 30, "a slider")
    slider = handle.find_element(By.XPATH, "./ancestor::div[contains(@class, 'widget-slider')][1]")
    readout = slider.find_element(By.CSS_SELECTOR, ".widget-readout")
    container = slider.find_element(By.XPATH, "./ancestor::div[contains(@class, 'widget-interact') or "
                                              "contains(@class, 'widget-vbox')][1]")
    value_before, view_before = readout.text, container.text
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", handle)
    ActionChains(browser).click(handle).send_keys(Keys.ARROW_RIGHT).send_keys(Keys.ARROW_RIGHT).perform()
    wait_for(browser, lambda d: readout.text != value_before, 30, "the slider's readout to move")
    wait_for(browser, lambda d: container.text != view_before, 60, "the output to follow the slider")
    print(f"\n{CHAPTER}: Run All took {seconds:.1f} s for {n_code} code cells; {widget_outputs} widget outputs, "
          f"{len(views)} widget views rendered")


def test_the_nbgrader_panels_list_every_lab_on_first_use(lab, browser):
    """Nbgrader > Formgrader and Nbgrader > Assignment List on the first `make lab`, started with a learner's PATH."""
    from selenium.webdriver.common.by import By

    from fp8lab.labs.catalog import list_labs

    base, token, copy, url, printed = lab
    labs = [lab.name for lab in list_labs()]
    assert f"labs: released {len(labs)} of {len(labs)} into" in printed, printed
    browser.get(f"{base}/lab?token={token}&reset")

    def panel_text(d, tab: str) -> str | None:
        if current_tab(d) != tab:
            return None
        return d.execute_script("return document.querySelector('#jp-main-dock-panel .jp-MainAreaWidget:not(.lm-mod-hidden)')"
                                "?.innerText;")

    click_menu(browser, "Nbgrader", "Assignment List")
    listed = wait_for(browser, lambda d: (t := panel_text(d, "Assignments")) and all(n in t for n in labs) and t, 60,
                      f"the Assignments panel to list the {len(labs)} released labs")
    for wrong in ("Error fetching courses", "exchange directory does not exist", "Error"):
        assert wrong not in listed, f"the Assignments panel says {wrong!r}:\n{listed[:1500]}"
    assert "Released assignments" in listed

    click_menu(browser, "Nbgrader", "Formgrader")
    frame = wait_for(browser, lambda d: current_tab(d) == "Formgrader" and next(
        (f for f in d.find_elements(By.CSS_SELECTOR, "#jp-main-dock-panel iframe") if f.is_displayed()), None), 60,
        "the Formgrader tab")
    browser.switch_to.frame(frame)
    try:
        rows = wait_for(browser, lambda d: (t := d.execute_script("return document.body && document.body.innerText"))
                        and all(n in t for n in labs) and t, 60, f"the Formgrader to list the {len(labs)} labs")
        assert "Loading, please wait" not in rows and "error-500" not in browser.page_source, rows[:1500]
        assert "Manage Assignments" in rows
    finally:
        browser.switch_to.default_content()
