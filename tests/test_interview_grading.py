"""The one grading function behind the quiz, the widget and the tests."""

from __future__ import annotations

import dataclasses
import math

import pytest

import fp8lab.interview as iv
from fp8lab.interview.grading import parse_number, read_response, same_unit, split_unit

E4M3_MAX = iv.get_question("fp8-e4m3fn-max")          # numeric, exact, unit ""
SINGLE = iv.get_question("fp8-e4m3-ieee-max")         # answer A) 240
MULTIPLE = iv.get_question("mx-ue8m0-properties")     # answer A, B, D
OPEN = iv.get_question("fp8-why-two-formats")


@pytest.mark.parametrize("text, value", [
    ("448", 448.0), (" 448.0 ", 448.0), ("4.48e2", 448.0), ("1.75 * 2^8", 448.0), ("1.75 x 2^8", 448.0),
    ("1.75×2**8", 448.0), ("2^-9", 2.0**-9), ("2**-9", 2.0**-9), ("1/512", 2.0**-9), ("1,024", 1024.0),
    ("671,088,640", 671088640.0), ("−3", -3.0), ("inf", math.inf), ("-inf", -math.inf), ("４４８", 448.0),
    ("1_000", 1000.0),  # underscores group thousands like commas and spaces (refused before issue 17)
])
def test_parse_number_reads_what_people_type(text: str, value: float) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["", "abc", "0x7E", "1e", "__import__('os').system('true')", "2^99999", "1/0",
                                  "(1,2)", "[1]", "1_0", "1__000", "1,5", "1e999", "1e-999"])
def test_parse_number_refuses_anything_else(text: str) -> None:
    with pytest.raises(ValueError):
        parse_number(text)


def test_split_unit_and_same_unit() -> None:
    assert split_unit("16 GiB") == (16.0, "GiB")
    assert split_unit("8bits") == (8.0, "bits")
    assert split_unit("2^-9") == (2.0**-9, "")
    assert same_unit("bytes", "B") and same_unit("bits", "位") and same_unit("decades", "数量级")
    assert not same_unit("GiB", "GB")


def test_numeric_exact_answers() -> None:
    assert iv.grade(E4M3_MAX, "448").correct
    assert iv.grade(E4M3_MAX, 448).correct
    assert iv.grade(E4M3_MAX, "1.75 * 2^8").correct
    # the prompt states no precision: three significant figures, |x - 448| <= 0.5 (issue 22 §1)
    assert iv.grade(E4M3_MAX, "447.9").correct and not iv.grade(E4M3_MAX, "447.4").correct
    exact = iv.get_question("fb-fp16-max")  # "Give the exact value."
    assert iv.grade(exact, "65504").correct and not iv.grade(exact, "65500").correct
    g = iv.grade(E4M3_MAX, "480")
    assert g.correct is False and g.response == 480.0 and "448" in g.feedback


def test_numeric_tolerances() -> None:
    q = iv.get_question("fa-fp32-max")  # rel_tolerance 0.005
    assert iv.grade(q, "3.40e38").correct and iv.grade(q, "3.4e38").correct
    assert not iv.grade(q, "3.3e38").correct
    absolute = dataclasses.replace(E4M3_MAX, tolerance=1.0)
    assert iv.grade(absolute, "447").correct and not iv.grade(absolute, "446.5").correct
    assert "±1" in iv.grade(absolute, "447").feedback


def test_units_are_accepted_stripped_or_refused() -> None:
    q = iv.get_question("mx-mxfp8-bits")  # unit "bits"
    assert iv.grade(q, "8.25").correct
    assert iv.grade(q, "8.25 bits").correct and iv.grade(q, "8.25bit").correct and iv.grade(q, "8.25 位").correct
    g = iv.grade(q, "8.25 bytes")
    assert g.correct is False and "bits" in g.feedback and "bytes" in g.feedback


def test_infinity_answers() -> None:
    q = dataclasses.replace(E4M3_MAX, answer=math.inf)
    assert iv.grade(q, "inf").correct and iv.grade(q, "∞").correct and not iv.grade(q, "1e38").correct


def test_single_choice_by_letter_or_text() -> None:
    for response in ("A", "a", " a ", "A)", "a.", "（A）".strip("（）"), "240"):
        assert iv.grade(SINGLE, response).correct, response
    g = iv.grade(SINGLE, "b")
    assert g.correct is False and g.response == "B" and "A) 240" in g.feedback


def test_multiple_choice_any_spelling() -> None:
    for response in ("A B D", "a,b,d", "ABD", "d b a", "A、B、D", ["A", "B", "D"], ("d", "a", "b")):
        assert iv.grade(MULTIPLE, response).correct, response
    assert iv.grade(MULTIPLE, "A B").correct is False
    assert iv.grade(MULTIPLE, "A B C D").correct is False


def test_unreadable_answers_reveal_nothing() -> None:
    g = iv.grade(SINGLE, "Z")
    assert g.correct is False and g.response is None and "240" not in g.feedback
    with pytest.raises(ValueError, match="A/B/C/D"):
        read_response(SINGLE, "Z")
    with pytest.raises(ValueError):
        read_response(MULTIPLE, "A Q")
    with pytest.raises(TypeError):
        read_response(SINGLE, 1)


def test_open_questions_are_self_assessed() -> None:
    assert iv.grade(OPEN, "E4M3 for precision, E5M2 for range").correct is None
    assert iv.grade(OPEN, "whatever", self_assessed=True).correct is True
    assert iv.grade(OPEN, "", self_assessed=False).correct is False
    assert iv.grade(OPEN, "x").answer == OPEN.text("model_answer")


def test_feedback_speaks_the_learners_language() -> None:
    assert iv.grade(E4M3_MAX, "448", lang="zh").feedback.startswith("正确")
    assert iv.grade(E4M3_MAX, "1", lang="zh").feedback.startswith("不对")
    assert iv.grade(SINGLE, "A", lang="zh").explanation == SINGLE.text("explanation", "zh")
    assert "self" not in iv.grade(OPEN, "x", lang="zh").feedback.lower()
    with pytest.raises(ValueError):
        iv.grade(E4M3_MAX, "448", lang="fr")


def test_every_question_accepts_its_own_answer_and_rejects_another() -> None:
    for q in iv.load_bank():
        if q.kind == "numeric":
            right, wrong = iv.format_answer(q), repr(q.answer * 2 + 1)
        elif q.kind == "single":
            right, wrong = q.answer, next(x for x in q.letters if x != q.answer)
        elif q.kind == "multiple":
            right = " ".join(q.answer)
            wrong = " ".join(sorted(set(q.letters) ^ {q.letters[0]})) or q.letters[1]
        else:
            continue
        for lang in iv.LANGS:
            assert iv.grade(q, right, lang).correct is True, (q.id, right)
            assert iv.grade(q, wrong, lang).correct is False, (q.id, wrong)
