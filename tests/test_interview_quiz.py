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
    """The CLI path of --verify, on a selection (the whole bank's checks run in test_interview_bank.py): a line
    saying what is verified comes first, then the problems and their count; the whole bank is the default."""
    assert main(["quiz", "--verify", "--tag", "e4m3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("verifying ") and "selected question" in out[0] and out[-1] == "no problems", out
    with pytest.MonkeyPatch.context() as mp:
        import fp8lab.interview.checks as checks
        seen = []
        mp.setattr(checks, "verify", lambda qs=None: seen.append(qs) or [])
        assert main(["quiz", "--verify"]) == 0 and seen == [None]
        assert capsys.readouterr().out.splitlines()[0] == "verifying the whole bank: the schema, then every check"


# ----------------------------------------------------------------------------------------------
# issue 22 §1: the header does not spoil the answer; every offered filter value selects something
def test_the_header_names_no_id_and_the_solution_does() -> None:
    ids = ["myth-fp4-range-240", "fp8-e4m3fn-max", "fp8-why-two-formats"]
    for lang in iv.LANGS:
        result, text = run("s\n448\nsome answer\ny\n", lang=lang, ids=ids)
        headers = [line for line in text.splitlines() if line.startswith("[")]
        assert len(headers) == 3 and not any(i in h for h in headers for i in ids), headers
        for i in ids:
            assert text.count(i) == 2, (i, text)  # "Question id: <id> (ask it again: fp8lab quiz --id <id>)"
            solution = text.index("Question id: " if lang == "en" else "题目编号：")
            assert solution > text.index(headers[0])


def _quiz_parser():
    from fp8lab.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, __import__("argparse")._SubParsersAction))
    return parser, sub.choices["quiz"]


def test_every_offered_topic_kind_and_difficulty_selects_questions() -> None:
    from fp8lab.interview.cli import _selected

    parser, quiz = _quiz_parser()
    offered = [(a.option_strings[0], c) for a in quiz._actions if a.dest in ("topic", "kind", "difficulty")
               for c in a.choices]
    assert {o for o, _ in offered} == {"--topic", "--kind", "--difficulty"} and len(offered) >= 18
    for option, value in offered:
        assert _selected(parser.parse_args(["quiz", option, value])), (option, value)
    assert _selected(parser.parse_args(["quiz", "--myths"]))
    myths = {q.id for q in iv.load_bank(myths=True)}
    assert {q.id for q in _selected(parser.parse_args(["quiz", "--topic", "myths"]))} == myths
    assert {q.id for q in iv.load_bank(topic=["fp8", "myths"])} >= myths


def test_the_examples_the_quiz_help_gives_select_questions() -> None:
    import shlex

    from fp8lab.interview import cli as quiz_cli

    parser, quiz = _quiz_parser()
    lines = [line.split("#")[0] for line in quiz_cli.__doc__.splitlines() if line.strip().startswith("fp8lab quiz")]
    assert len(lines) >= 5
    for line in lines:
        words = [w for w in shlex.split(line.replace("[", "").replace("]", "")) if w not in ("...",)][1:]
        words = [w if w != "T" else "fp8" for w in words]
        args = parser.parse_args(words)
        assert quiz_cli._selected(args), line
    assert ".apkg" in quiz.format_help()  # offered, and written (tests/test_interview_export.py opens the package)


# ----------------------------------------------------------------------------------------------
# issue 17 §3: Ctrl+C, --export to a bad place, a closed pipe: one line or quiet, never a traceback
def test_ctrl_c_during_the_quiz_is_one_line_and_exit_130() -> None:
    import signal

    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "FP8LAB_DEBUG": ""}
    # a test runner started in the background (nohup, &) ignores SIGINT, and a child inherits that: give the
    # quiz the default disposition a terminal's Ctrl+C meets, so that Python installs its handler
    p = subprocess.Popen([sys.executable, "-m", "fp8lab.cli", "quiz", "--id", "fp8-e4m3fn-max"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert p.stdout.readline().strip() == b""  # the blank line before the header
        assert p.stdout.readline().startswith(b"[1/1]")
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    lines = [line for line in err.decode().splitlines() if line.strip()]
    assert p.returncode == 130 and lines == ["fp8lab quiz: interrupted"], (p.returncode, err)
    assert b"Traceback" not in out + err


@pytest.mark.parametrize("where", ["missing-folder", "a-folder", "empty"])
def test_export_to_a_bad_place_is_one_line_and_exit_2(where: str, tmp_path, capsys) -> None:
    target = {"missing-folder": str(tmp_path / "missing" / "cards.txt"), "a-folder": str(tmp_path), "empty": ""}[where]
    with pytest.raises(SystemExit) as info:
        main(["quiz", "--export", target])
    out, err = capsys.readouterr()
    assert info.value.code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "fp8lab quiz: error: argument --export" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_tag_is_an_error(capsys) -> None:
    assert main(["quiz", "--tag", "no-such-tag", "--list"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "no question has the tag 'no-such-tag'" in err and len(err.splitlines()) == 1
    assert main(["quiz", "--tag", "e4m3", "--list"]) == 0


@pytest.mark.parametrize("args", [["quiz", "--list"], ["quiz", "--list", "--lang", "zh"], ["quiz", "--verify"],
                                  ["quiz", "--id", "fp8-e4m3fn-max"]])
def test_a_closed_stdout_exits_141_quietly(args) -> None:
    read, write = os.pipe()
    os.close(read)  # like `| head` that has already exited
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "FP8LAB_DEBUG": ""}
    try:
        p = subprocess.run([sys.executable, "-m", "fp8lab.cli", *args], stdout=write, stderr=subprocess.PIPE,
                           input=b"448\n", env=env, timeout=120)
    finally:
        os.close(write)
    assert p.returncode == 141 and p.stderr == b"", (p.returncode, p.stderr.decode())


def test_list_into_head_shows_no_traceback() -> None:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "FP8LAB_DEBUG": ""}
    p = subprocess.run(["bash", "-c", f"set -o pipefail; '{sys.executable}' -m fp8lab.cli quiz --list | head -1"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.stdout.startswith("id") and p.stdout.count("\n") == 1 and "Traceback" not in p.stderr and p.stderr == ""
    assert p.returncode in (0, 141)  # 141 when the pipe closed before the list was written, 0 when it fit the buffer
