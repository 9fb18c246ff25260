"""Notebook quizzes on ipywidgets 8, with :func:`grade` behind every button so tests can drive them.

- :func:`check_yourself` (what each chapter's "Check yourself" section calls): the given questions,
  each with an answer box or choice buttons and *Check*, *Hint*, *Show answer*.
- :func:`quiz_widget`: a mixed quiz, one question at a time, with *Previous* / *Next* and a score.

The logic lives in :class:`QuestionCard` and :class:`QuizStepper`; their methods (``check``,
``hint``, ``show_answer``, ``self_assess``, ``next``, ``previous``) are what the buttons call.
Without ipywidgets, :func:`check_yourself` prints the questions (answers not shown) instead.

>>> print(questions_text(["fp8-e4m3fn-max"], "en"))
1. What is the largest finite value of OCP FP8 E4M3 (float8_e4m3fn)?
"""

from __future__ import annotations

import html
from typing import Any, Callable, Sequence

from .._optional import require
from ..lang import current
from .bank import LANGS, Question, get_question, load_bank
from .grading import Grade, grade, question_header, question_text, solution_html
from .messages import name, say
from .quiz import select_questions

__all__ = ["QuestionCard", "QuizStepper", "check_yourself", "quiz_widget", "questions_text"]


def _questions(items: "Sequence[str | Question]") -> list[Question]:
    if isinstance(items, (str, Question)):
        items = [items]
    out = []
    for item in items:
        if isinstance(item, Question):
            out.append(item)
        elif isinstance(item, str):
            out.append(get_question(item))
        else:
            raise TypeError(f"questions are ids (str) or Question objects, got {type(item).__name__}")
    return out


def _lang(lang: str | None) -> str:
    """``lang`` checked, or the edition's language (:func:`fp8lab.lang.current`) when None."""
    if lang is None:
        return current()
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    return lang


def questions_text(ids: "Sequence[str | Question]", lang: str | None = None) -> str:
    """The questions as numbered plain text, answers left out (the fallback where widgets do not render).

    >>> questions_text(["fp8-e4m3fn-max"], "zh").splitlines()[0].endswith("最大有限值是多少？")
    True
    """
    lang = _lang(lang)
    blocks = []
    for i, q in enumerate(_questions(ids), 1):
        blocks.append(f"{i}. {question_text(q, lang)}")
    return "\n\n".join(blocks)


class QuestionCard:
    """One question as widgets: the prompt, an input fitting its kind, Check / Hint / Show answer, feedback.

    ``grade_result`` holds the last :class:`Grade` (None before a check); ``on_graded`` callbacks
    run after every grading (the stepper keeps its score with them).
    """

    def __init__(self, question: Question, lang: str | None = None, number: str = "") -> None:
        w = require("ipywidgets", "the quiz widgets")  # an ImportError that names the extra, if it is missing

        self.question, self.lang = question, _lang(lang)
        self.hints_shown = 0
        self.grade_result: Grade | None = None
        self.revealed = False
        self.on_graded: list[Callable[["QuestionCard"], None]] = []
        q = question
        title = f"<b>{html.escape(number)}</b> " if number else ""
        meta = f"<span style='color:gray;font-size:small'>{html.escape(question_header(q, self.lang))}</span>"
        lang = self.lang
        self.prompt = w.HTML(f"<p>{title}{html.escape(q.text('prompt', lang))}<br>{meta}</p>")
        full = w.Layout(width="95%")
        self.choice_boxes: list[Any] = []
        if q.kind == "single":
            options = [(f"{k}) {c}", k) for k, c in zip(q.letters, q.items("choices", lang))]
            self.input = w.RadioButtons(options=options, value=None, layout=full)
        elif q.kind == "multiple":
            self.choice_boxes = [w.Checkbox(value=False, description=f"{k}) {c}", indent=False, layout=full)
                                 for k, c in zip(q.letters, q.items("choices", lang))]
            self.input = w.VBox(self.choice_boxes)
        elif q.kind == "numeric":
            unit = f" ({name('unit', q.unit, self.lang)})" if q.unit else ""
            self.input = w.Text(placeholder="12, 2^-9, 1.5e-3" + unit, description=say("your_answer", lang),
                                style={"description_width": "initial"})
        else:
            self.input = w.Textarea(placeholder=say("your_answer", lang), layout=w.Layout(width="95%", height="5em"))
        self.check_button = w.Button(description=say("check", lang), button_style="primary")
        self.hint_button = w.Button(description=say("hint", lang), button_style="info")
        self.answer_button = w.Button(description=say("show_answer", lang))
        self.covered_button = w.Button(description=say("covered", lang), button_style="success")
        self.missed_button = w.Button(description=say("missed", lang), button_style="warning")
        self.assess_row = w.HBox([self.covered_button, self.missed_button], layout=w.Layout(display="none"))
        self.hints = w.HTML()
        self.feedback = w.HTML()
        self.solution = w.HTML()
        self.check_button.on_click(lambda _: self.check())
        self.hint_button.on_click(lambda _: self.hint())
        self.answer_button.on_click(lambda _: self.show_answer())
        self.covered_button.on_click(lambda _: self.self_assess(True))
        self.missed_button.on_click(lambda _: self.self_assess(False))
        buttons = w.HBox([self.check_button, self.hint_button, self.answer_button])
        self.box = w.VBox([self.prompt, self.input, buttons, self.hints, self.feedback, self.solution,
                           self.assess_row], layout=w.Layout(border="1px solid #ddd", padding="4px", margin="4px 0"))

    def response(self) -> Any:
        """What the learner entered: a letter, a list of letters, or text.

        (Doctests of widget classes need ipywidgets; see tests/test_interview_widget.py.)
        """
        if self.question.kind == "multiple":
            return [k for k, box in zip(self.question.letters, self.choice_boxes) if box.value]
        return self.input.value

    def _set_feedback(self, g: Grade) -> None:
        colour = {True: "green", False: "firebrick", None: "black"}[g.correct]
        self.feedback.value = f"<p style='color:{colour}'>{html.escape(g.feedback)}</p>"

    def check(self) -> Grade:
        """Grade the current input; open questions show the model answer and ask for a self-assessment."""
        q = self.question
        if q.kind == "open":
            self.show_answer()
            g = grade(q, self.input.value or "", self.lang)
            self._set_feedback(g)
            return g
        response = self.response()
        if response is None or response == "" or response == []:
            g = grade(q, "", self.lang)  # unreadable: says what to type, reveals nothing
        else:
            g = grade(q, response, self.lang)
        self._set_feedback(g)
        if g.response is not None:
            self.grade_result = g
            self.solution.value = f"<div style='font-size:small'>{_why(q, self.lang)}</div>"
            for callback in self.on_graded:
                callback(self)
        return g

    def hint(self) -> str | None:
        """Show the next hint (None, and a note, when there is none left)."""
        hints = self.question.items("hints", self.lang)
        if self.hints_shown < len(hints):
            self.hints_shown += 1
        else:
            self.hints.value += f"<p><i>{html.escape(say('no_more_hints', self.lang))}</i></p>"
            return None
        shown = hints[: self.hints_shown]
        self.hints.value = "".join(f"<p>💡 {html.escape(say('hint_line', self.lang, i=i, n=len(hints), text=h))}</p>"
                                   for i, h in enumerate(shown, 1))
        return shown[-1]

    def show_answer(self) -> str:
        """Reveal the full solution (answer, explanation, model answer and points, a myth's correction)."""
        self.revealed = True
        self.solution.value = solution_html(self.question, self.lang)
        if self.question.kind == "open":
            self.assess_row.layout.display = "flex"
        return self.solution.value

    def self_assess(self, covered: bool) -> Grade:
        """Record the learner's verdict on an open question (``covered`` True or False)."""
        if self.question.kind != "open":
            raise ValueError(f"{self.question.id} is a {self.question.kind} question: it is graded, not self-assessed")
        g = grade(self.question, self.input.value or "", self.lang, self_assessed=bool(covered))
        self.grade_result = g
        self._set_feedback(g)
        for callback in self.on_graded:
            callback(self)
        return g


def _why(q: Question, lang: str) -> str:
    colon = html.escape(say("colon", lang).rstrip())
    parts = [f"<b>{html.escape(say('explanation', lang))}{colon}</b> {html.escape(q.text('explanation', lang))}"]
    if q.is_myth:
        parts.append(f"<b>{html.escape(say('correction', lang))}{colon}</b> {html.escape(q.text('correction', lang))}")
    return "<br>".join(parts)


class QuizStepper:
    """A quiz of several cards shown one at a time, with Previous / Next and a running score."""

    def __init__(self, questions: Sequence[Question], lang: str | None = None) -> None:
        w = require("ipywidgets", "the quiz widgets")  # an ImportError that names the extra, if it is missing

        if not questions:
            raise ValueError("a quiz needs at least one question")
        self.lang = lang = _lang(lang)
        n = len(questions)
        self.cards = [QuestionCard(q, lang, say("question_n", lang, i=i, n=n)) for i, q in enumerate(questions, 1)]
        self.index = 0
        self.score = w.HTML()
        self.prev_button = w.Button(description=say("previous", lang), icon="arrow-left")
        self.next_button = w.Button(description=say("next", lang), icon="arrow-right")
        self.prev_button.on_click(lambda _: self.previous())
        self.next_button.on_click(lambda _: self.next())
        self.stage = w.Box([self.cards[0].box])
        for card in self.cards:
            card.on_graded.append(lambda _card: self._update())
        self.box = w.VBox([self.stage, w.HBox([self.prev_button, self.next_button, self.score])])
        self._update()

    @property
    def correct(self) -> int:
        """Cards whose last grade (or self-assessment) was correct."""
        return sum(bool(c.grade_result and c.grade_result.correct) for c in self.cards)

    @property
    def answered(self) -> int:
        """Cards graded or self-assessed at least once."""
        return sum(c.grade_result is not None and c.grade_result.correct is not None for c in self.cards)

    def _update(self) -> None:
        self.stage.children = (self.cards[self.index].box,)
        self.prev_button.disabled = self.index == 0
        self.next_button.disabled = self.index == len(self.cards) - 1
        self.score.value = html.escape(say("widget_score", self.lang, correct=self.correct, n=len(self.cards),
                                           answered=self.answered))

    def next(self) -> int:
        """Show the next question; returns the new index."""
        self.index = min(self.index + 1, len(self.cards) - 1)
        self._update()
        return self.index

    def previous(self) -> int:
        """Show the previous question; returns the new index."""
        self.index = max(self.index - 1, 0)
        self._update()
        return self.index


def check_yourself(ids: "Sequence[str | Question]", lang: str | None = None, *, widgets: bool | None = None) -> Any:
    """The "Check yourself" block of a chapter: the given questions as widget cards (a ``VBox`` with ``.cards``).

    Where ipywidgets is missing (or ``widgets=False``) it prints the questions, answers not shown,
    and returns None.

    ``lang`` defaults to the edition's language (:func:`fp8lab.lang.current`), so the Chinese chapters ask in Chinese.

    >>> check_yourself(["fp8-e4m3fn-max"], "en", widgets=False)
    Check yourself
    1. What is the largest finite value of OCP FP8 E4M3 (float8_e4m3fn)?
    >>> from fp8lab.lang import use
    >>> with use("zh"):
    ...     check_yourself(["fp8-e4m3fn-max"], widgets=False)  # doctest: +ELLIPSIS
    自测
    1. ...最大有限值是多少？
    """
    questions = _questions(ids)
    lang = _lang(lang)
    if not questions:
        raise ValueError("check_yourself needs at least one question id")
    if widgets is None:
        try:
            import ipywidgets  # noqa: F401
        except ImportError:
            widgets = False
        else:
            widgets = True
    if not widgets:
        print(say("check_yourself", lang))
        print(questions_text(questions, lang))
        return None
    w = require("ipywidgets", "the quiz widgets")  # an ImportError that names the extra, if it is missing

    cards = [QuestionCard(q, lang, f"{i}.") for i, q in enumerate(questions, 1)]
    box = w.VBox([w.HTML(f"<h4>{html.escape(say('check_yourself', lang))}</h4>"), *[c.box for c in cards]])
    box.cards = cards
    return box


def quiz_widget(questions: "Sequence[str | Question] | None" = None, *, topic: "str | Sequence[str] | None" = None,
                n: int | None = 10, seed: int | None = None, lang: str | None = None) -> Any:
    """A mixed quiz in the notebook: ``n`` questions (of ``topic``, or the given ones) one at a time, with a score.

    Returns the ``VBox`` to display; its ``.quiz`` is the :class:`QuizStepper` behind it.
    """
    pool = _questions(questions) if questions is not None else load_bank(topic=topic)
    chosen = select_questions(pool, n, seed)
    stepper = QuizStepper(chosen, lang)
    stepper.box.quiz = stepper
    return stepper.box
