"""``make lab``: open the learner's working copy of the course in JupyterLab and print one line to open.

    python -m fp8lab.course.lab [--fresh] [--refresh CHAPTER] [--copy DIR] [JupyterLab arguments ...]

It makes or updates the working copy (:mod:`fp8lab.course.workcopy`: ``my_course/`` at the top of the
repository, git-ignored), makes JupyterLab's nbgrader panels ready (the gradebook, and every lab released
into the local exchange: :func:`fp8lab.labs.jupyter.prepare_panels`, one line), starts JupyterLab with the repository root as its root folder (so the copy,
``exercises/`` and the labs' nbgrader panels are all in reach), waits until the server answers, prints

    fp8lab course: open http://localhost:8888/lab/tree/my_course/00_welcome.ipynb?token=...

and opens that page in a browser unless ``--no-browser`` is given. The server runs with this
interpreter's ``bin/`` first on its PATH (nbgrader's Formgrader runs ``alembic`` by name) and finds
``nbgrader_config.py`` whatever its root folder is. Any other argument goes to
JupyterLab unchanged (``--port=8890``, ``--ip=0.0.0.0``, ``--no-browser``, ``--ServerApp.*``...).
JupyterLab's own log goes to ``<copy>/.jupyterlab.log``. Ctrl+C stops the server (no prompt).

>>> opts = parse_arguments(["--port=9000", "--no-browser", "--ServerApp.base_url=/x/"])
>>> opts.port, opts.open_browser, opts.passthrough
(9000, False, ['--ServerApp.base_url=/x/'])
>>> lab_url("127.0.0.1", 9000, "my_course/00_welcome.ipynb", "abc")
'http://127.0.0.1:9000/lab/tree/my_course/00_welcome.ipynb?token=abc'
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .chapters import CHAPTERS
from .workcopy import COPY_DIR, fresh_copy, refresh_chapter, sync_working_copy

__all__ = ["LabOptions", "parse_arguments", "lab_url", "free_port", "jupyter_command", "server_env",
           "command_hint", "main"]

#: the repository this module belongs to (fp8lab/course/lab.py -> the folder holding notebooks/)
REPO = Path(__file__).resolve().parents[2]


@dataclass
class LabOptions:
    """What ``make lab`` was asked for: our own options and the JupyterLab arguments to pass through."""

    root: Path = REPO
    source: Path = REPO / "notebooks"
    copy: Path | None = None
    fresh: bool = False
    refresh: list[str] = field(default_factory=list)
    port: int | None = None
    ip: str = "localhost"
    token: str | None = None
    open_browser: bool = True
    start_timeout: float = 120.0
    passthrough: list[str] = field(default_factory=list)
    lang: str = "en"  # issue 23: the edition (make lab LANG=zh: my_course_zh/, Chinese text, kernels in Chinese)


def _value(args: list[str], i: int, name: str) -> tuple[str, int]:
    """The value of option ``name`` at ``args[i]`` (``--name=value`` or ``--name value``) and the next index."""
    arg = args[i]
    if "=" in arg:
        return arg.split("=", 1)[1], i + 1
    if i + 1 >= len(args):
        raise SystemExit(f"make lab: {name} needs a value")
    return args[i + 1], i + 2


def parse_arguments(argv: Sequence[str]) -> LabOptions:
    """Split ``argv`` into our options and JupyterLab's, reading the port, IP, token and browser choice from both.

    >>> parse_arguments(["--ip", "0.0.0.0", "--IdentityProvider.token=t"]).ip
    '0.0.0.0'
    """
    ours = argparse.ArgumentParser(prog="make lab", add_help=False)
    ours.add_argument("--fresh", action="store_true")
    ours.add_argument("--refresh", action="append", default=[])
    ours.add_argument("--copy", type=Path)
    ours.add_argument("--root", type=Path)
    ours.add_argument("--source", type=Path)
    ours.add_argument("--start-timeout", type=float, default=120.0)
    ours.add_argument("--lang", default="en")  # issue 23
    known, rest = ours.parse_known_args(list(argv))
    opts = LabOptions(fresh=known.fresh, refresh=list(known.refresh), start_timeout=known.start_timeout)
    if known.root:
        opts.root = known.root.resolve()
    opts.source = (known.source or opts.root / "notebooks").resolve()
    # --- issue 23: the edition's own working copy (my_course_zh/) ---
    from ..lang import check_lang

    try:
        opts.lang = check_lang(known.lang)
    except (TypeError, ValueError) as e:
        raise SystemExit(f"make lab: {e}") from None
    copy_dir = COPY_DIR if opts.lang == "en" else f"{COPY_DIR}_{opts.lang}"
    opts.copy = (known.copy or opts.root / copy_dir).resolve()
    i = 0
    while i < len(rest):
        arg = rest[i]
        name = arg.split("=", 1)[0]
        if name in ("--port", "--ServerApp.port"):
            value, i = _value(rest, i, name)
            try:
                opts.port = int(value)
            except ValueError:
                raise SystemExit(f"make lab: {name} must be a port number, got {value!r}") from None
        elif name in ("--ip", "--ServerApp.ip"):
            opts.ip, i = _value(rest, i, name)
        elif name in ("--IdentityProvider.token", "--ServerApp.token", "--NotebookApp.token"):
            opts.token, i = _value(rest, i, name)
        elif name in ("--no-browser", "--ServerApp.open_browser=False"):
            opts.open_browser = False
            i += 1
        else:
            opts.passthrough.append(arg)
            i += 1
    return opts


def lab_url(ip: str, port: int, path: str, token: str) -> str:
    """The URL that opens ``path`` (relative to the server's root folder) in JupyterLab.

    >>> lab_url("0.0.0.0", 8888, "a b.ipynb", "t").startswith("http://")
    True
    """
    host = ip
    if ip in ("", "0.0.0.0", "::", "*"):
        host = socket.gethostname() or "localhost"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    quoted = urllib.request.quote(path)
    return f"http://{host}:{port}/lab/tree/{quoted}" + (f"?token={token}" if token else "")


def free_port(start: int = 8888, tries: int = 100) -> int:
    """The first port from ``start`` on that nothing listens on (JupyterLab's default is 8888).

    >>> 1 <= free_port() <= 65535
    True
    """
    for port in range(start, start + tries):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port between {start} and {start + tries - 1}; pass --port=N")


def jupyter_command(opts: LabOptions, port: int, token: str) -> list[str]:
    """The JupyterLab command line ``make lab`` runs (the browser is opened by us, once the server answers).

    >>> cmd = jupyter_command(LabOptions(root=Path("/r")), 8888, "t"); cmd[1:4]
    ['-m', 'jupyterlab', '--no-browser']
    """
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--ServerApp.root_dir={opts.root}",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--ServerApp.ip={opts.ip}",
           f"--IdentityProvider.token={token}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # JupyterLab refuses to run as root without it (CI and containers do)
    return cmd + list(opts.passthrough)


def server_env(environ: "dict[str, str] | None" = None) -> dict[str, str]:
    """The environment JupyterLab runs in: ``environ`` (default: ours) with this interpreter's ``bin/`` first on
    PATH (nbgrader runs ``alembic`` by name; the Formgrader fails without it) and the repository, which holds
    ``nbgrader_config.py``, on JUPYTER_CONFIG_PATH.

    >>> env = server_env({"PATH": "/usr/bin:/bin"})
    >>> env["PATH"].split(os.pathsep)[0] == os.path.dirname(sys.executable), env["PATH"].endswith("/usr/bin:/bin")
    (True, True)
    """
    env = dict(os.environ if environ is None else environ)
    bindir = os.path.dirname(sys.executable)  # not resolved: a venv's python is a symlink out of the venv
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != bindir]
    env["PATH"] = os.pathsep.join([bindir, *path])
    config = [p for p in env.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep) if p]
    if str(REPO) not in config:
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join([*config, str(REPO)])
    return env


def command_hint(root: Path) -> str:
    """How to run the ``fp8lab`` command from a shell (it is installed in this interpreter's ``bin/``).

    >>> "fp8lab --help" in command_hint(Path.cwd())
    True
    """
    bindir = Path(os.path.dirname(sys.executable))
    try:
        shown = bindir.relative_to(root).as_posix()
    except ValueError:
        shown = bindir.as_posix()
    if not (bindir / "activate").is_file():
        return f"the fp8lab command: {shown}/fp8lab --help"
    return f"the fp8lab command: run `source {shown}/activate` once in your shell, then `fp8lab --help` " \
           f"(or {shown}/fp8lab --help without activating)"


def _prepare_panels() -> str:
    """The labs' line: :func:`fp8lab.labs.jupyter.prepare_panels`, or why the nbgrader panels stay empty."""
    try:
        from ..labs.jupyter import prepare_panels
    except ImportError as err:
        return f"labs: JupyterLab's nbgrader panels are not ready ({err})"
    return prepare_panels()


def _wait_until_ready(port: int, token: str, proc: subprocess.Popen, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{port}/api/status"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
            with urllib.request.urlopen(req, timeout=2) as resp:
                if resp.status == 200:
                    return True
        except (OSError, urllib.error.URLError):
            time.sleep(0.3)
    return False


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)  # the server and its kernels (it runs in its own session)
    except (ProcessLookupError, PermissionError, AttributeError):
        proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``make lab``; returns the exit status (0 after Ctrl+C, 1 if JupyterLab did not start)."""
    opts = parse_arguments(sys.argv[1:] if argv is None else argv)
    assert opts.copy is not None
    try:
        opts.copy.relative_to(opts.root)
    except ValueError:
        print(f"make lab: the working copy {opts.copy} must lie inside the server's root folder {opts.root}",
              file=sys.stderr)
        return 2
    edition_env: dict[str, str] = {}
    if opts.lang != "en":  # issue 23: the copy is made from the chapters rendered in the edition
        from .edition import edition_kernel, write_edition

        rendered = opts.root / "build" / "edition" / opts.lang
        write_edition(opts.source, rendered, opts.lang)
        opts.source = rendered
        edition_env = edition_kernel(rendered.parent / f"{opts.lang}-kernel", opts.lang)
    try:
        if opts.fresh and opts.copy.exists():
            old = fresh_copy(opts.source, opts.copy)
            print(f"your previous copy is kept as {old}")
        for chapter in opts.refresh:
            backup = refresh_chapter(opts.source, opts.copy, chapter)
            print(f"refreshed {chapter} from notebooks/" + (f"; your version is kept as {backup.name}" if backup else ""))
        report = sync_working_copy(opts.source, opts.copy)
    except ValueError as e:
        print(f"make lab: {e}", file=sys.stderr)
        return 2
    for line in report.lines():
        print(line.replace(str(opts.root) + os.sep, ""))
    print(_prepare_panels().replace(str(REPO) + os.sep, ""), flush=True)
    port = opts.port or free_port()
    token = opts.token if opts.token is not None else secrets.token_hex(16)
    log_path = opts.copy / ".jupyterlab.log"
    cmd = jupyter_command(opts, port, token)
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=opts.root,
                                env={**server_env(), **edition_env}, start_new_session=True)

    def _terminate(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM (kill, timeout, a CI runner) stops the server as Ctrl+C does

    previous = signal.signal(signal.SIGTERM, _terminate)
    # Ctrl+C stops the server even where SIGINT arrived ignored (a shell's background job, some CI runners)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        if not _wait_until_ready(port, token, proc, opts.start_timeout):
            _stop(proc)
            tail = log_path.read_text(errors="replace").splitlines()[-25:]
            print(f"make lab: JupyterLab did not start (port {port}); the end of {log_path}:", file=sys.stderr)
            print("\n".join(tail), file=sys.stderr)
            return 1
        welcome = opts.copy / CHAPTERS[0].file
        target = welcome if welcome.exists() else opts.copy
        url = lab_url(opts.ip, port, target.relative_to(opts.root).as_posix(), token)
        print(f"fp8lab course: open {url}", flush=True)
        print(f"(your working copy: {opts.copy.relative_to(opts.root)}/ · JupyterLab's log: "
              f"{log_path.relative_to(opts.root)} · Ctrl+C stops the server)", flush=True)
        print(command_hint(REPO), flush=True)
        if opts.open_browser:
            import webbrowser

            webbrowser.open(url)
        return_code = proc.wait()
        return 0 if return_code in (0, -signal.SIGTERM) else return_code
    except KeyboardInterrupt:
        print("\nstopping JupyterLab ...", flush=True)
        return 0
    finally:
        _stop(proc)
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)


if __name__ == "__main__":
    sys.exit(main())
