"""The course's twelve chapters, in order: file stems and titles (one list that the welcome map, the
navigation links, ``make lab`` and the tests read).

>>> CHAPTERS[3].file, CHAPTERS[3].title
('03_fp8.ipynb', 'FP8: E4M3 and E5M2')
>>> neighbours("03_fp8")
('02_fp16_bf16', '04_scaling')
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Chapter", "CHAPTERS", "chapter", "neighbours", "navigation_markdown"]


@dataclass(frozen=True)
class Chapter:
    """One chapter: ``stem`` (file name without ``.ipynb``), its number and its title.

    >>> Chapter("01_fp32", "FP32: the reference format").number
    '01'
    """

    stem: str
    title: str

    @property
    def number(self) -> str:
        """The two-digit chapter number.

        >>> CHAPTERS[11].number
        '11'
        """
        return self.stem[:2]

    @property
    def file(self) -> str:
        """The notebook's file name.

        >>> CHAPTERS[0].file
        '00_welcome.ipynb'
        """
        return f"{self.stem}.ipynb"

    def link(self, anchor: str = "") -> str:
        """A markdown link to the chapter, relative to ``notebooks/`` (or a working copy of it).

        >>> CHAPTERS[1].link()
        '[01 FP32: the reference format](01_fp32.ipynb)'
        """
        return f"[{self.number} {self.title}]({self.file}{'#' + anchor if anchor else ''})"


CHAPTERS: tuple[Chapter, ...] = (
    Chapter("00_welcome", "Welcome"),
    Chapter("01_fp32", "FP32: the reference format"),
    Chapter("02_fp16_bf16", "FP16 and BF16"),
    Chapter("03_fp8", "FP8: E4M3 and E5M2"),
    Chapter("04_scaling", "Scaling a tensor into 8 bits"),
    Chapter("05_microscaling", "UE8M0 and microscaling"),
    Chapter("06_fp8_gemm", "FP8 GEMM"),
    Chapter("07_mixed_precision_training", "Mixed-precision training"),
    Chapter("08_kv_cache_and_memory", "KV cache and memory"),
    Chapter("09_int8_fp4_inference", "INT8 and FP4 inference"),
    Chapter("10_hardware", "Hardware"),
    Chapter("11_interview_review", "Interview review"),
)


def chapter(stem_or_number: str) -> Chapter:
    """The chapter with this stem, file name or two-digit number.

    >>> chapter("06").stem, chapter("06_fp8_gemm.ipynb").title
    ('06_fp8_gemm', 'FP8 GEMM')
    """
    key = str(stem_or_number).removesuffix(".ipynb")
    for c in CHAPTERS:
        if key in (c.stem, c.number):
            return c
    raise ValueError(f"no chapter {stem_or_number!r}; the chapters are {[c.stem for c in CHAPTERS]}")


def neighbours(stem: str) -> tuple[str | None, str | None]:
    """Stems of the previous and the next chapter (None at either end).

    >>> neighbours("00_welcome"), neighbours("11_interview_review")
    ((None, '01_fp32'), ('10_hardware', None))
    """
    i = CHAPTERS.index(chapter(stem))
    prev = CHAPTERS[i - 1].stem if i > 0 else None
    nxt = CHAPTERS[i + 1].stem if i + 1 < len(CHAPTERS) else None
    return prev, nxt


def navigation_markdown(stem: str) -> str:
    """The navigation line a chapter carries: previous, the welcome map, next.

    >>> print(navigation_markdown("03_fp8"))
    ← [02 FP16 and BF16](02_fp16_bf16.ipynb) · [course map](00_welcome.ipynb#Course-map) · [04 Scaling a tensor into 8 bits](04_scaling.ipynb) →
    """
    prev, nxt = neighbours(stem)
    parts = []
    if prev is not None:
        parts.append("← " + chapter(prev).link())
    parts.append("[course map](00_welcome.ipynb#Course-map)")
    if nxt is not None:
        parts.append(chapter(nxt).link() + " →")
    return " · ".join(parts)
