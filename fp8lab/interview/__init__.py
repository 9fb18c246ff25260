"""The interview question bank: every checkable answer is computed by fp8lab, and a test proves it.

Questions live as data in ``fp8lab/interview/data/<topic>.toml`` (format: ``data/README.md``).
Load them, check them, grade answers:

>>> import fp8lab.interview as iv
>>> q = iv.get_question("fp8-e4m3fn-max")
>>> q.answer, q.unit, q.topic
(448.0, '', 'fp8')
>>> iv.verify([q])
[]
>>> iv.grade(q, "2^8 * 1.75").correct
True

For content authors (after editing a TOML file):

    .venv/bin/python -m fp8lab.interview            # every schema problem and every failing check
    .venv/bin/python -m fp8lab.interview fp8.toml   # only the questions of one file
    .venv/bin/python -c "import fp8lab.interview as iv; print(iv.verify())"

``verify()`` returns a list of :class:`Problem` (question id, kind ``load``/``schema``/``check``,
message); it is empty when every field is well formed and every ``check`` reproduces the stored
answer. Nothing here imports torch unless a check's source mentions it; ipywidgets is imported
only when a widget is built.

Learners: ``fp8lab quiz`` in a terminal; ``check_yourself(ids)`` and ``quiz_widget(topic=...)`` in
a notebook; ``fp8lab quiz --export cards.apkg`` (or ``cards.txt``) for Anki.
"""

from .bank import (DIFFICULTIES, KINDS, LANGS, TOPICS, Problem, Question, get_question, load_bank, read_bank,
                   schema_problems)
from .checks import check_question, run_check, verify
from .export import anki_text, export
from .grading import Grade, format_answer, grade, question_text, solution_text
from .quiz import QuizResult, run_quiz, select_questions
from .widget import check_yourself, questions_text, quiz_widget

__all__ = [
    "Question", "Problem", "load_bank", "get_question", "read_bank", "verify", "schema_problems",
    "check_question", "run_check", "TOPICS", "KINDS", "DIFFICULTIES", "LANGS",
    "Grade", "grade", "format_answer", "question_text", "solution_text",
    "run_quiz", "select_questions", "QuizResult", "check_yourself", "quiz_widget", "questions_text",
    "export", "anki_text",
]
