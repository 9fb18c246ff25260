"""The notebook widgets: their callbacks called directly and through the buttons, and a real kernel rendering them."""

from __future__ import annotations

import pytest

import fp8lab.interview as iv
from fp8lab.interview.widget import QuestionCard, QuizStepper

pytest.importorskip("ipywidgets")


def card(qid: str, lang: str = "en") -> QuestionCard:
    return QuestionCard(iv.get_question(qid), lang)


def test_numeric_card_check_hint_and_answer() -> None:
    c = card("fp8-e4m3fn-max")
    c.input.value = "480"
    assert c.check().correct is False and "448" in c.feedback.value and "firebrick" in c.feedback.value
    c.input.value = "1.75 * 2^8"
    c.check_button.click()
    assert c.grade_result.correct is True and "Correct." in c.feedback.value
    assert c.hint() and c.hint() and c.hint() is None and "No more hints" in c.hints.value
    c.answer_button.click()
    assert c.revealed and "The answer is 448." in c.solution.value


def test_an_empty_or_garbled_answer_is_not_graded() -> None:
    c = card("fp8-e4m3fn-max")
    assert c.check().response is None and c.grade_result is None
    c.input.value = "lots"
    assert c.check().response is None and "448" not in c.feedback.value


def test_single_and_multiple_choice_cards() -> None:
    s = card("fp8-e4m3-ieee-max")
    assert s.input.value is None
    s.input.value = "B"
    assert s.check().correct is False
    s.input.value = "A"
    assert s.check().correct is True
    m = card("mx-ue8m0-properties", "zh")
    for letter, box in zip("ABCD", m.choice_boxes):
        box.value = letter in "ABD"
    m.check_button.click()
    assert m.grade_result.correct is True and "正确" in m.feedback.value
    m.choice_boxes[2].value = True
    assert m.check().correct is False


def test_open_card_self_assessment() -> None:
    c = card("fp8-why-two-formats")
    c.input.value = "E4M3 for precision, E5M2 for range"
    assert c.check().correct is None
    assert c.assess_row.layout.display == "flex" and "Model answer" in c.solution.value
    c.covered_button.click()
    assert c.grade_result.correct is True
    c.missed_button.click()
    assert c.grade_result.correct is False
    with pytest.raises(ValueError):
        card("fp8-e4m3fn-max").self_assess(True)


def test_check_yourself_builds_one_card_per_id() -> None:
    ids = ["fp8-e4m3fn-max", "fb-bf16-epsilon", "mx-block-size"]
    box = iv.check_yourself(ids, lang="zh")
    assert [c.question.id for c in box.cards] == ids
    assert "自测" in box.children[0].value and box.cards[0].check_button.description == "检查"


def test_check_yourself_without_widgets_prints_questions_not_answers(capsys) -> None:
    assert iv.check_yourself(["fp8-e4m3-ieee-max"], widgets=False) is None
    out = capsys.readouterr().out
    assert "A) 240" in out and "The answer" not in out and "Why" not in out


def test_quiz_widget_steps_and_keeps_score() -> None:
    box = iv.quiz_widget(topic="fp8", n=3, seed=5)
    quiz: QuizStepper = box.quiz
    assert len(quiz.cards) == 3 and quiz.prev_button.disabled and not quiz.next_button.disabled
    assert quiz.stage.children == (quiz.cards[0].box,)
    quiz.next_button.click()
    quiz.next_button.click()
    assert quiz.index == 2 and quiz.next_button.disabled and quiz.stage.children == (quiz.cards[2].box,)
    assert quiz.next() == 2 and quiz.previous() == 1
    first = quiz.cards[0]
    q = first.question
    if q.kind == "open":
        first.show_answer()
        first.self_assess(True)
    else:
        right = {"single": q.answer, "numeric": iv.format_answer(q)}.get(q.kind)
        if q.kind == "multiple":
            for letter, b in zip(q.letters, first.choice_boxes):
                b.value = letter in q.answer
        else:
            first.input.value = right
        first.check()
    assert quiz.correct == 1 and quiz.answered == 1 and "1 of 3 correct" in quiz.score.value
    same = iv.quiz_widget(topic="fp8", n=3, seed=5).quiz
    assert [c.question.id for c in same.cards] == [c.question.id for c in quiz.cards]
    with pytest.raises(ValueError):
        iv.quiz_widget([], n=3)


@pytest.mark.kernel
def test_the_widgets_render_in_a_real_kernel() -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import fp8lab.interview as iv\niv.check_yourself(['fp8-e4m3fn-max'])"),
                nbformat.v4.new_code_cell("iv.quiz_widget(topic='microscaling', n=2, seed=1)")]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    for cell in nb.cells:
        kinds = {k for out in cell.outputs for k in out.get("data", {})}
        assert "application/vnd.jupyter.widget-view+json" in kinds, cell.outputs
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    assert any(m["model_name"] == "ButtonModel" and m["state"].get("description") == "Check" for m in state.values())
