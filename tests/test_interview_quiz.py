"""The terminal quiz driven end to end by scripted input (right, wrong, hint, skip, quit), in both languages."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

import fp8lab.interview as iv
from fp8lab.cli import main
from fp8lab.interview.quiz import select_questions

IDS = ["fp8-e4m3fn-max", "fp8-e4m3-ieee-max", "mx-ue8m0-properties", "fp8-why-two-formats", "fb-fp16-max"]


def run(script: str, lang: str = "en", ids=IDS):
    out = io.StringIO()
    result = iv.run_quiz([iv.get_question(i) for i in ids], lang=lang, input=io.StringIO(script), output=out)
    return result, out.getvalue()


def test_right_wrong_hint_skip_and_self_assessment_in_english() -> None:
    # 448 after a hint (right), "b" (wrong), "a c" then "abd" (unreadable? no: readable but wrong), open: text + y, skip
    script = "h\nh\nh\n448\nb\nA C\nsome answer\nmaybe\ny\ns\n"
    result, text = run(script)
    statuses = [o.status for o in result.outcomes]
    assert statuses == ["correct", "wrong", "wrong", "correct", "skipped"]
    assert result.outcomes[0].hints_used == 2 and "No more hints." in text
    assert "Hint 1/2: E4M3FN has no infinity" in text and "Hint 2/2: " in text
    assert "Not quite. The answer is A) 240." in text
    assert "The answer is A, B, D." in text
    assert "Model answer:" in text and "A good answer covers:" in text and "Please type y or n." in text
    assert "Skipped." in text and "The answer is 65504." in text
    assert "Score: 2/4 correct (50%), 1 skipped, 0 not reached." in text
    assert "By topic" in text and "fp16_bf16" in text and "microscaling" in text
    by = result.by_topic()
    assert by["fp8"] == {"asked": 3, "answered": 3, "correct": 2, "skipped": 0}
    assert by["fp16_bf16"]["skipped"] == 1


def test_quit_and_unreadable_input_in_chinese() -> None:
    result, text = run("你好\n480\nq\n", lang="zh")
    assert [o.status for o in result.outcomes] == ["wrong"]
    assert result.quit and result.unseen == 4
    assert "无法识别这个回答" in text and "不对。答案是 448。" in text and "测验已结束。" in text
    assert "得分：1 题中答对 0 题（0%），跳过 0 题，未作答 4 题。" in text
    assert "OCP FP8 E4M3（float8_e4m3fn）能表示的最大有限值是多少？" in text


def test_chinese_right_answers_hints_and_open_question() -> None:
    result, text = run("h\n448\na\nabd\n两种格式分别偏重精度和范围\n是\ns\n", lang="zh")
    assert [o.status for o in result.outcomes] == ["correct", "correct", "correct", "correct", "skipped"]
    assert "提示 1/2：" in text and "正确。" in text and "参考答案" in text and "自评：已覆盖要点。" in text
    assert "得分：4 题中答对 4 题（100%）" in text


def test_end_of_input_stops_like_quit() -> None:
    result, text = run("448\n")
    assert result.quit and len(result.outcomes) == 1 and result.unseen == 4 and "Quiz stopped." in text


def test_select_questions_is_seeded_and_bounded() -> None:
    pool = iv.load_bank(topic="fp8")
    a, b = select_questions(pool, 5, seed=7), select_questions(pool, 5, seed=7)
    assert [q.id for q in a] == [q.id for q in b] and len(a) == 5
    assert len(select_questions(pool, 10_000, seed=1)) == len(pool)
    with pytest.raises(ValueError):
        select_questions(pool, 0)


def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([sys.executable, "-m", "fp8lab.cli", *args], input=stdin, capture_output=True,
                          text=True, encoding="utf-8", env=env, timeout=120)


def test_the_cli_quiz_reads_a_pipe_in_both_languages() -> None:
    p = cli("quiz", "--id", "fp8-e4m3fn-max", "--id", "fp8-e4m3-ieee-max", stdin="h\n448\nc\n")
    assert p.returncode == 0, p.stderr
    assert "[1/2] fp8 · numeric · easy" in p.stdout and "Correct." in p.stdout and "Not quite." in p.stdout
    assert "Score: 1/2 correct (50%)" in p.stdout
    p = cli("quiz", "--topic", "fp8", "--difficulty", "easy", "--n", "2", "--seed", "3", "--lang", "zh", stdin="q\n")
    assert p.returncode == 0 and "测验已结束。" in p.stdout and "未作答 2 题" in p.stdout


def test_the_cli_myths_flag_asks_only_myths() -> None:
    myths = iv.load_bank(myths=True)
    p = cli("quiz", "--myths", "--n", "3", "--seed", "1", stdin="s\ns\ns\n")
    assert p.returncode == 0
    if myths:
        asked = {line.split()[2] for line in p.stdout.splitlines() if line.startswith("Question id: ")}
        assert len(asked) == 3 and asked <= {q.id for q in myths}
    else:
        assert "No questions match" in p.stdout


def test_the_cli_list(capsys) -> None:
    assert main(["quiz", "--list", "--topic", "microscaling"]) == 0
    out = capsys.readouterr().out
    n = len(iv.load_bank(topic="microscaling"))
    assert out.splitlines()[0].split() == ["id", "topic", "kind", "difficulty", "prompt"]
    assert f"{n} questions" in out and "mx-ue8m0-meaning" in out


def test_the_cli_errors_are_clear(capsys) -> None:
    assert main(["quiz", "--id", "no-such-id"]) == 2
    assert "no question with id" in capsys.readouterr().err
    assert main(["quiz", "--lang", "both", "--n", "1"]) == 2
    with pytest.raises(SystemExit):
        main(["quiz", "--topic", "fp9"])


def test_the_cli_verify(capsys) -> None:
    assert main(["quiz", "--verify"]) == 0
    assert "no problems" in capsys.readouterr().out
