"""The edition language: English (``"en"``) or Simplified Chinese (``"zh"``), for widgets, figures and the quiz.

The language is read, in this order, from :func:`use` (a context, per thread and per asyncio task),
from the ``FP8LAB_LANG`` environment variable (what ``make lab LANG=zh`` sets for its kernels), and
otherwise English. Code that shows text to a learner asks :func:`current` and never reads the
environment itself.

>>> current() in LANGUAGES
True
>>> with use("zh"):
...     current()
'zh'
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator

__all__ = ["LANGUAGES", "ENV_VAR", "current", "use", "check_lang", "pick"]

#: The editions the course has.
LANGUAGES: tuple[str, ...] = ("en", "zh")
#: The environment variable that sets the language for a whole process (a kernel of the Chinese working copy).
ENV_VAR = "FP8LAB_LANG"

_override: contextvars.ContextVar[str | None] = contextvars.ContextVar("fp8lab_lang", default=None)


def check_lang(lang: object) -> str:
    """Return ``lang`` normalised ("zh-CN", "ZH", "zh_Hans" give "zh"), or raise a ValueError naming the editions.

    >>> check_lang("zh-CN"), check_lang("EN")
    ('zh', 'en')
    """
    if not isinstance(lang, str):
        raise TypeError(f"lang must be a string, one of {', '.join(LANGUAGES)}; got {type(lang).__name__}")
    base = lang.strip().lower().replace("_", "-").split("-", 1)[0]
    if base not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}: the course has the editions {', '.join(LANGUAGES)}")
    return base


def current() -> str:
    """The language in force here: the innermost :func:`use`, else ``$FP8LAB_LANG``, else "en".

    >>> with use("en"):
    ...     current()
    'en'
    """
    lang = _override.get()
    if lang is not None:
        return lang
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        try:
            return check_lang(env)
        except (TypeError, ValueError):
            return "en"
    return "en"


@contextlib.contextmanager
def use(lang: str) -> Iterator[str]:
    """Make ``lang`` the language inside the ``with`` block (this thread or task only).

    >>> with use("zh") as lang:
    ...     lang
    'zh'
    """
    token = _override.set(check_lang(lang))
    try:
        yield _override.get()  # type: ignore[misc]
    finally:
        _override.reset(token)


def pick(en: str, zh: str, lang: str | None = None) -> str:
    """The text for ``lang`` (default :func:`current`) out of an English and a Chinese version.

    >>> pick("scale", "缩放因子", "zh")
    '缩放因子'
    """
    return zh if (check_lang(lang) if lang is not None else current()) == "zh" else en
