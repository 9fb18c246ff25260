"""The quiz in Chinese: every piece of UI the quiz, the list, the cards and the widgets show is Chinese with --lang zh."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest

import fp8lab.interview as iv
from fp8lab.interview.bank import DIFFICULTIES, KINDS, TOPICS
from fp8lab.interview.grading import question_header, same_unit, solution_text, unit_line
from fp8lab.interview.layout import display_width, fit, text_table
from fp8lab.interview.messages import NAMES, MESSAGES, name, source_name
from fp8lab.lang import use

BANK = iv.load_bank()
# English that Chinese UI text may keep: format and product names, units the field writes in Latin letters
_KEEP = {"FP8", "FP4", "FP16", "BF16", "INT8", "GEMM", "MX", "KV", "AI", "Infra", "Python", "FLOP", "token", "GiB",
         "MiB", "GB", "TFLOPS", "LLM"}
_ENGLISH_WORD = re.compile(r"(?<![\w.])[A-Za-z][A-Za-z0-9]*")


def english_words(text: str) -> set[str]:
    return set(_ENGLISH_WORD.findall(text)) - _KEEP


def test_every_topic_kind_difficulty_and_message_has_a_chinese_name():
    for table, keys in (("topic", TOPICS), ("kind", KINDS), ("difficulty", DIFFICULTIES)):
        for k in keys:
            assert re.search(r"[\u4e00-\u9fff]", name(table, k, "zh")) or name(table, k, "zh") in _KEEP, (table, k)
    for key, texts in MESSAGES.items():
        assert set(texts) == {"en", "zh"}, key
        assert english_words(re.sub(r"\{\w+\}", "", texts["zh"])) <= {"h", "s", "q", "y", "n", "A", "C", "e", "fp8lab",
                                                                     "quiz", "id", "float64", "inf", "U", "ipywidgets"}, key


@pytest.mark.parametrize("q", BANK, ids=lambda q: q.id)
def test_the_ui_around_each_question_is_chinese(q):
    assert english_words(question_header(q, "zh")) == set()
    if q.kind == "numeric" and q.unit:
        line = unit_line(q, "zh")
        assert line.startswith("（单位：") and english_words(line) == set(), line
        assert same_unit(q.unit, name("unit", q.unit, "zh"))  # what the quiz shows, the grader reads
    if q.is_myth:
        assert english_words(source_name(q.claim_source, "zh")) == set(), q.claim_source
        assert "出处类型：" in solution_text(q, "zh") and q.claim_source not in solution_text(q, "zh")


def test_a_chinese_quiz_transcript_has_no_english_ui(tmp_path):
    ids = [q.id for q in BANK if q.kind == "numeric" and q.unit][:2] + [next(q.id for q in BANK if q.is_myth)]
    out = io.StringIO()
    iv.run_quiz([iv.get_question(i) for i in ids], lang="zh", input=io.StringIO("h\ns\nx\ns\ns\n"), output=out)
    text = out.getvalue()
    for q in (iv.get_question(i) for i in ids):  # take away the bank's own texts; what remains is UI
        for f in ("prompt", "explanation", "claim", "correction"):
            if getattr(q, f):
                text = text.replace(q.text(f, "zh"), "")
        for h in q.items("hints", "zh") + (q.items("choices", "zh") if q.choices else ()):
            text = text.replace(h, "")
        text = text.replace(q.id, "")
    leftover = english_words(text) - {"h", "s", "q", "x", "fp8lab", "quiz", "id", "A", "B", "C", "D", "E", "F"}
    assert leftover == set(), leftover


def test_list_in_chinese_shows_chinese_prompts_within_70_columns():
    p = subprocess.run([sys.executable, "-m", "fp8lab.cli", "quiz", "--list", "--topic", "kv_memory", "--lang", "zh"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["编号", "主题", "题型", "难度", "题目"]
    rows = lines[2:-2]
    assert len(rows) == len(iv.load_bank(topic="kv_memory")) and lines[-1].startswith("共 ")
    starts = {display_width(r[: r.index("KV 缓存与显存")]) for r in rows}
    assert len(starts) == 1  # the topic column starts at one display column on every row
    for r in rows:
        assert display_width(r) - display_width(r.split("  ")[0]) < 120


@pytest.mark.parametrize("text, width", [("最大有限值是多少？" * 10, 70), ("E4M3 的 ulp 是多少" * 9, 40), ("short", 10),
                                         ("（单位：字节）" * 20, 11)])
def test_fit_cuts_by_display_width(text, width):
    out = fit(text, width)
    assert display_width(out) <= width
    assert out == text or out.endswith("...")


def test_tables_align_by_display_width_with_chinese_cells():
    rows = [[name("topic", t, "zh"), i, i * 10] for i, t in enumerate(TOPICS)]
    lines = text_table(["主题", "题数", "答对"], rows, align="lrr").splitlines()
    ends = {display_width(line) for line in lines}
    assert len(ends) == 1  # right-aligned last column ends at one column everywhere
    score = iv.quiz.score_table(iv.quiz.QuizResult(tuple(iv.quiz.Outcome(q, "correct") for q in BANK[::20]), 11), "zh")
    table = score.split("按主题\n", 1)[1].splitlines()
    assert len({display_width(line) for line in table}) == 1


def test_widgets_take_the_edition_language(monkeypatch, capsys):
    q = iv.get_question("fp8-e4m3fn-max")
    with use("zh"):
        iv.check_yourself([q], widgets=False)
        assert iv.questions_text([q]) == iv.questions_text([q], "zh")
    assert capsys.readouterr().out.startswith("自测")
    monkeypatch.setenv("FP8LAB_LANG", "zh")
    iv.check_yourself([q], widgets=False)
    assert capsys.readouterr().out.startswith("自测")
    monkeypatch.setenv("FP8LAB_LANG", "en")
    iv.check_yourself([q], widgets=False)
    assert capsys.readouterr().out.startswith("Check yourself")
    with use("zh"):
        iv.check_yourself([q], "en", widgets=False)  # an explicit language wins
    assert capsys.readouterr().out.startswith("Check yourself")


def test_widget_cards_follow_the_edition_language():
    pytest.importorskip("ipywidgets")
    from fp8lab.interview.widget import QuestionCard, QuizStepper

    q = iv.get_question("kv-llama2-7b-per-token")
    with use("zh"):
        card, stepper = QuestionCard(q), QuizStepper([q])
        box = iv.quiz_widget([q])
    assert card.lang == stepper.lang == box.quiz.lang == "zh"
    assert "KV 缓存与显存 · 数值 · 易" in card.prompt.value and card.check_button.description == "检查"


def test_questions_text_does_not_show_ids():
    # an id such as myth-fp4-range-240 hints at the answer; it is shown with the solution only
    myth = next(q for q in BANK if q.is_myth)
    assert myth.id not in iv.questions_text([myth], "en")


def test_the_terminal_quiz_defaults_to_the_edition_language():
    env = dict(__import__("os").environ, FP8LAB_LANG="zh")
    p = subprocess.run([sys.executable, "-m", "fp8lab.cli", "quiz", "--list", "--topic", "gemm"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0 and p.stdout.split()[:2] == ["编号", "主题"], p.stderr
    p = subprocess.run([sys.executable, "-m", "fp8lab.cli", "quiz", "--list", "--topic", "gemm", "--lang", "en"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0 and p.stdout.split()[:2] == ["id", "topic"], p.stderr
