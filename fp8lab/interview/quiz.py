"""The terminal quiz: one question at a time from a text stream (a terminal or a pipe), graded by :func:`grade`.

Per question: ``h`` shows the next hint, ``s`` skips (and shows the answer), ``q`` stops. Choice
questions take letters, numeric ones a number (the unit optional), open ones a line of text and
then a self-assessment ``y``/``n`` against the model answer and its points. At the end: the score
overall and by topic. The header names topic, kind and difficulty; the question's id (which can
hint at the answer, e.g. ``myth-fp4-range-240``) is shown with the solution.

>>> import io
>>> from fp8lab.interview import get_question
>>> out = io.StringIO()
>>> result = run_quiz([get_question("fp8-e4m3fn-max")], input=io.StringIO("h\\n448\\n"), output=out)
>>> result.correct, result.answered, "Correct." in out.getvalue()
(1, 1, True)
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from typing import Any, Sequence, TextIO

from .bank import LANGS, TOPICS, Question
from .layout import text_table
from .grading import grade, question_header, question_text, read_response, solution_parts, solution_text
from .messages import name, say

__all__ = ["Outcome", "QuizResult", "select_questions", "run_quiz", "score_table"]

_HINT, _SKIP, _QUIT = {"h", "hint", "提示"}, {"s", "skip", "跳过"}, {"q", "quit", "exit", "退出"}
_YES, _NO = {"y", "yes", "是", "对", "会"}, {"n", "no", "否", "不", "不会"}


@dataclass(frozen=True)
class Outcome:
    """What happened to one question: ``status`` is ``correct``, ``wrong`` or ``skipped``.

    >>> from fp8lab.interview import get_question
    >>> Outcome(get_question("fp8-e4m3fn-max"), "skipped").hints_used
    0
    """

    question: Question
    status: str
    hints_used: int = 0
    response: Any = None


@dataclass(frozen=True)
class QuizResult:
    """The outcomes of a quiz (in order), how many questions were selected, and whether the learner quit.

    >>> QuizResult((), 3, True).unseen
    3
    """

    outcomes: tuple[Outcome, ...]
    asked: int
    quit: bool = False

    @property
    def correct(self) -> int:
        """Questions answered correctly (self-assessed ones included).

        >>> QuizResult((), 0).correct
        0
        """
        return sum(o.status == "correct" for o in self.outcomes)

    @property
    def answered(self) -> int:
        """Questions answered (right or wrong), not skipped.

        >>> QuizResult((), 0).answered
        0
        """
        return sum(o.status in ("correct", "wrong") for o in self.outcomes)

    @property
    def skipped(self) -> int:
        """Questions skipped.

        >>> QuizResult((), 0).skipped
        0
        """
        return sum(o.status == "skipped" for o in self.outcomes)

    @property
    def unseen(self) -> int:
        """Questions never reached because the learner quit.

        >>> QuizResult((), 5).unseen
        5
        """
        return self.asked - len(self.outcomes)

    def by_topic(self) -> dict[str, dict[str, int]]:
        """Counts per topic (course order): asked, answered, correct, skipped.

        >>> QuizResult((), 0).by_topic()
        {}
        """
        out: dict[str, dict[str, int]] = {}
        for o in sorted(self.outcomes, key=lambda o: TOPICS.index(o.question.topic)
                        if o.question.topic in TOPICS else len(TOPICS)):
            row = out.setdefault(o.question.topic, {"asked": 0, "answered": 0, "correct": 0, "skipped": 0})
            row["asked"] += 1
            row["answered"] += o.status in ("correct", "wrong")
            row["correct"] += o.status == "correct"
            row["skipped"] += o.status == "skipped"
        return out


def select_questions(questions: Sequence[Question], n: int | None = 10, seed: int | None = None) -> list[Question]:
    """``n`` questions drawn without replacement (all of them, shuffled, when ``n`` is None or larger).

    >>> from fp8lab.interview import load_bank
    >>> a = select_questions(load_bank(), 3, seed=1)
    >>> a == select_questions(load_bank(), 3, seed=1), len(a) <= 3
    (True, True)
    """
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"n must be a positive int or None, got {n!r}")
    pool = list(questions)
    rng = random.Random(seed)
    rng.shuffle(pool)
    return pool if n is None else pool[:n]


def score_table(result: QuizResult, lang: str = "en") -> str:
    """The score line and the by-topic table, as text.

    >>> print(score_table(QuizResult((), 0)))
    Score: 0/0 correct (-), 0 skipped, 0 not reached.
    """
    pct = f"{100 * result.correct / result.answered:.0f}%" if result.answered else "-"
    line = say("score", lang, correct=result.correct, answered=result.answered, pct=pct, skipped=result.skipped,
               unseen=result.unseen)
    rows = [[name("topic", t, lang), c["asked"], c["answered"], c["correct"], c["skipped"]]
            for t, c in result.by_topic().items()]
    if not rows:
        return line
    headers = [say(k, lang) for k in ("topic", "asked", "answered", "n_correct", "n_skipped")]
    return f"{line}\n\n{say('by_topic', lang)}\n{text_table(headers, rows, align='lrrrr')}"


class _Session:
    def __init__(self, lang: str, input: TextIO, output: TextIO) -> None:
        self.lang, self.input, self.output = lang, input, output

    def say(self, text: str = "") -> None:
        print(text, file=self.output)

    def ask(self, prompt: str) -> str | None:
        self.output.write(prompt)
        self.output.flush()
        line = self.input.readline()
        if not line:  # end of input: stop like `q`
            self.say()
            return None
        if not getattr(self.input, "isatty", lambda: False)():
            self.say(line.rstrip("\n"))  # echo what a pipe typed, so a transcript reads like a session
        return line.strip()

    def hint(self, q: Question, used: int) -> int:
        hints = q.items("hints", self.lang)
        if used < len(hints):
            self.say(say("hint_line", self.lang, i=used + 1, n=len(hints), text=hints[used]))
            return used + 1
        self.say(say("no_more_hints", self.lang))
        return used

    def rest_of_solution(self, q: Question) -> None:
        colon = say("colon", self.lang)
        for label, body in solution_parts(q, self.lang)[1:]:
            if isinstance(body, tuple):
                self.say(f"{label}{colon.rstrip()}")
                for b in body:
                    self.say(f"  - {b}")
            else:
                self.say(f"{label}{colon}{body}")


def _prompt(q: Question, lang: str) -> str:
    if q.kind == "single":
        return say("prompt_choice", lang)
    if q.kind == "multiple":
        return say("prompt_multi", lang)
    if q.kind == "numeric":
        return say("prompt_number", lang, unit=name("unit", q.unit, lang) if q.unit else say("pure_number", lang))
    return say("prompt_open", lang)


def _one(s: _Session, q: Question) -> Outcome | None:
    """Ask one question; None when the learner quits."""
    used = 0
    while True:
        line = s.ask(_prompt(q, s.lang))
        if line is None:
            return None
        cmd = line.lower()
        if cmd in _HINT:
            used = s.hint(q, used)
            continue
        if cmd in _SKIP:
            s.say(say("skipped", s.lang))
            s.say(solution_text(q, s.lang))
            s.say(say("question_id", s.lang, id=q.id))
            return Outcome(q, "skipped", used)
        if cmd in _QUIT:
            return None
        if q.kind == "open":
            s.say(say("self_assess", s.lang))
            s.say(solution_text(q, s.lang))
            while True:
                answer = s.ask(say("prompt_self", s.lang))
                if answer is None:
                    return None
                if answer.lower() in _YES or answer.lower() in _NO:
                    ok = answer.lower() in _YES
                    s.say(grade(q, line, s.lang, self_assessed=ok).feedback)
                    s.say(say("question_id", s.lang, id=q.id))
                    return Outcome(q, "correct" if ok else "wrong", used, line)
                s.say(say("yes_no", s.lang))
        try:
            read_response(q, line, s.lang)
        except ValueError as err:
            s.say(say("unreadable", s.lang, reason=err))
            continue
        g = grade(q, line, s.lang)
        s.say(g.feedback)
        s.rest_of_solution(q)
        s.say(say("question_id", s.lang, id=q.id))
        return Outcome(q, "correct" if g.correct else "wrong", used, g.response)


def run_quiz(questions: Sequence[Question], *, lang: str = "en", input: TextIO | None = None,
             output: TextIO | None = None) -> QuizResult:
    """Ask ``questions`` in order on ``input``/``output`` (default stdin/stdout) and return the result.

    The score table is printed at the end (also after ``q`` or the end of the input).

    >>> import io
    >>> run_quiz([], input=io.StringIO(""), output=io.StringIO()).asked
    0
    """
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    s = _Session(lang, input or sys.stdin, output or sys.stdout)
    questions = list(questions)
    if not questions:
        s.say(say("no_questions", lang))
        return QuizResult((), 0)
    outcomes: list[Outcome] = []
    stopped = False
    for i, q in enumerate(questions, 1):
        s.say()
        s.say(f"[{i}/{len(questions)}] {question_header(q, lang)}")
        s.say(question_text(q, lang))
        outcome = _one(s, q)
        if outcome is None:
            s.say(say("quit", lang))
            stopped = True
            break
        outcomes.append(outcome)
    result = QuizResult(tuple(outcomes), len(questions), stopped)
    s.say()
    s.say(score_table(result, lang))
    return result
