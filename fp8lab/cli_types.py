"""What the command lines share: argparse types, a parser whose errors are one line, and error reporting.

Bad values are reported before anything runs, each as one line on stderr and exit code 2:

>>> positive_int("4096"), nonnegative_int("0"), fraction("0.9")
(4096, 0, 0.9)
>>> p = CliParser(prog="demo")
>>> _ = p.add_argument("--n", type=positive_int)
>>> p.parse_args(["--n", "0"])  # stderr: demo: error: argument --n: expected a whole number >= 1, got '0' (see demo --help)
Traceback (most recent call last):
...
SystemExit: 2
"""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import sys
from typing import Callable, NoReturn, Sequence

from ._optional import missing_extra

__all__ = ["positive_int", "nonnegative_int", "fraction", "output_path", "CliParser", "one_line", "error_text",
           "run_command", "MAX_WHOLE", "DEBUG_ENV"]

#: the largest whole number an option takes: what a signed 64-bit integer (numpy, torch, a seed) holds
MAX_WHOLE = 2**63 - 1

#: set this environment variable to 1 to see the traceback of an error instead of its one-line summary
DEBUG_ENV = "FP8LAB_DEBUG"


def _whole(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {text!r}")
    if value > MAX_WHOLE:
        raise argparse.ArgumentTypeError(f"expected a whole number <= 2^63 - 1, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1 (and at most 2^63 - 1).

    >>> positive_int("12")
    12
    """
    return _whole(text, 1)


def nonnegative_int(text: str) -> int:
    """An argparse type: a whole number >= 0 (seeds; at most 2^63 - 1).

    >>> nonnegative_int("3")
    3
    """
    return _whole(text, 0)


def fraction(text: str) -> float:
    """An argparse type: a number in (0, 1], such as the fraction of a GPU's memory to use.

    >>> fraction("1"), fraction("0.9")
    (1.0, 0.9)
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}") from None
    if not (math.isfinite(value) and 0 < value <= 1):
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}")
    return value


def output_path(text: str) -> pathlib.Path:
    """An argparse type: a file that can be written (its folder exists, it is not a folder), checked before any work.

    The check opens the file for appending (an existing file is left as it is) or creates and removes it.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     output_path(f"{tmp}/grades.csv").name
    'grades.csv'
    """
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a file name, got {text!r}")
    path = pathlib.Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder; name a file to write")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: folder {str(path.parent)!r} does not exist")
    try:
        if path.exists():
            with open(path, "ab"):
                pass
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            os.unlink(path)
    except OSError as err:
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: {err.strerror or err}") from None
    return path


def one_line(text: object) -> str:
    """``text`` as one line: runs of whitespace (newlines included) become one space, other unprintable characters escapes.

    >>> one_line("unknown model 'a\\nb'\\u202e  ok\\n")
    "unknown model 'a b'\\\\u202e ok"
    """
    s = " ".join(str(text).split())
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in s)


def error_text(err: BaseException) -> str:
    """A one-line message for an exception: its text; a KeyError's key without the repr quotes; an OSError's reason and file;
    for an optional module that is not installed, the extra to install (:func:`fp8lab._optional.missing_extra`).

    >>> error_text(KeyError("no question with id 'x'")), error_text(FileNotFoundError(2, "No such file or directory", "a.csv"))
    ("no question with id 'x'", "No such file or directory: 'a.csv'")
    """
    extra = missing_extra(err)
    if extra is not None:
        text = extra
    elif isinstance(err, KeyError) and len(err.args) == 1 and isinstance(err.args[0], str):
        text = err.args[0]
    elif isinstance(err, OSError) and err.strerror:
        text = err.strerror + (f": {str(err.filename)!r}" if err.filename is not None else "")
    else:
        text = str(err)
    return one_line(text) or type(err).__name__


class CliParser(argparse.ArgumentParser):
    """An ArgumentParser whose error is one line on stderr, ``<prog>: error: <message> (see <prog> --help)``, exit 2.

    Subparsers made by ``add_subparsers`` are of the same class, so every subcommand reports alike.

    >>> p = CliParser(prog="demo"); _ = p.add_argument("x", type=float)
    >>> p.parse_args(["1.5"]).x
    1.5
    """

    def error(self, message: str) -> NoReturn:
        """Print one line (the message, and where the help is) to stderr and exit with code 2."""
        _print_err(f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)")
        self.exit(2)


def _print_err(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr closed or gone: nothing more can be said
        pass


def _is_expected(err: BaseException) -> bool:
    """Errors that say what is wrong with the input (or the files it names), as opposed to a bug."""
    if missing_extra(err) is not None:  # an optional dependency that is not installed
        return True
    if isinstance(err, (ValueError, TypeError, KeyError, OSError, argparse.ArgumentTypeError)):
        return True
    return type(err).__module__.split(".")[0] == "fp8lab"  # the project's own errors (NbgraderError, ...)


def _quiet_stdout() -> None:
    """Point stdout's file descriptor at /dev/null so that flushing it at exit cannot fail again."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass


def _leaf_prog(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str:
    """The prog of the (sub)command ``argv`` names, e.g. ``fp8lab labs grade``, as far as the words say."""
    for word in argv:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or word not in subs[0].choices:
            break
        parser = subs[0].choices[word]
    return parser.prog


def run_command(make_parser: Callable[[], argparse.ArgumentParser], argv: Sequence[str] | None = None,
                prepare: Callable[[argparse.Namespace], None] | None = None) -> int:
    """Parse ``argv`` with ``make_parser()``, run the chosen ``func`` and return its exit code, every error as one line.

    Errors that describe bad input (ValueError, TypeError, KeyError, OSError, fp8lab's own) or a
    missing optional dependency (named with its extra) print ``<prog>: error: <message>`` and return 2; any other exception prints its name and message with
    how to see the traceback (``FP8LAB_DEBUG=1``, which re-raises instead) and returns 1;
    Ctrl-C returns 130; a closed stdout (``fp8lab values bf16 | head -1``) returns 141 silently.
    argparse's own errors exit with code 2 (SystemExit) after one line, as :class:`CliParser` prints them.

    >>> def make():
    ...     p = CliParser(prog="demo"); p.add_argument("n", type=int); p.set_defaults(func=lambda a: print(10 // a.n))
    ...     return p
    >>> run_command(make, ["5"])
    2
    0
    >>> run_command(make, ["0"])  # stderr: demo: internal error: ZeroDivisionError: integer division ... FP8LAB_DEBUG=1 ...
    1
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = "fp8lab"
    try:
        parser = make_parser()
        prog = _leaf_prog(parser, argv)
        args = parser.parse_args(argv)
        if prepare is not None:
            prepare(args)
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a broken pipe shows here, where it is caught, rather than at exit
        return code
    except KeyboardInterrupt:
        _print_err(f"{prog}: interrupted")
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 141
    except Exception as err:  # noqa: BLE001 - the point: one line instead of a traceback
        if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
            raise
        if _is_expected(err):
            _print_err(f"{prog}: error: {error_text(err)}")
            return 2
        _print_err(f"{prog}: internal error: {type(err).__name__}: {error_text(err)} "
                   f"(a bug in fp8lab; run with {DEBUG_ENV}=1 to see the traceback)")
        return 1
