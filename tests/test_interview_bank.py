"""The interview bank: every file is well formed, every check reproduces its stored answer, and corruption is caught."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
import tomllib

import pytest

import fp8lab.interview as iv
from fp8lab.interview import bank, checks

MY_FILES = ("float_anatomy.toml", "fp16_bf16.toml", "fp8.toml", "microscaling.toml")


def all_questions() -> list[iv.Question]:
    return iv.load_bank()


# ----------------------------------------------------------------------------------------------
# the whole bank, whatever files exist
def test_every_file_parses_and_the_schema_holds() -> None:
    questions, problems = iv.read_bank()
    assert questions, "the bank is empty"
    assert [str(p) for p in problems] == []


def test_every_check_reproduces_its_stored_answer() -> None:
    problems = iv.verify()
    assert [str(p) for p in problems] == []


def test_ids_are_unique_and_well_formed() -> None:
    ids = [q.id for q in all_questions()]
    assert len(ids) == len(set(ids))
    assert all(bank._ID.match(i) for i in ids)


def test_both_languages_are_present_and_non_empty_everywhere() -> None:
    # an independent re-check of what the validator promises, straight from the TOML files
    for path in sorted(bank.DATA_DIR.glob("*.toml")):
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        for raw in doc["question"]:
            for name in ("prompt", "explanation", "model_answer", "weak_answer", "claim", "correction"):
                if name in raw:
                    assert set(raw[name]) == {"en", "zh"}, (raw["id"], name)
                    assert all(raw[name][lang].strip() for lang in ("en", "zh")), (raw["id"], name)
            for name in ("hints", "choices", "points"):
                if name in raw:
                    assert len(raw[name]["en"]) == len(raw[name]["zh"]) > 0, (raw["id"], name)
                    assert all(s.strip() for lang in ("en", "zh") for s in raw[name][lang]), (raw["id"], name)


def test_answers_fit_their_kind() -> None:
    for q in all_questions():
        assert q.kind in iv.KINDS and q.difficulty in iv.DIFFICULTIES and q.topic in iv.TOPICS, q.id
        if q.kind == "single":
            assert 2 <= len(q.letters) <= 6 and q.answer in q.letters, q.id
        elif q.kind == "multiple":
            assert q.answer and set(q.answer) <= set(q.letters) and list(q.answer) == sorted(set(q.answer)), q.id
        elif q.kind == "numeric":
            assert isinstance(q.answer, float) and isinstance(q.unit, str), q.id
            assert (q.tolerance is None) != (q.rel_tolerance is None), q.id
        else:
            assert q.answer is None and q.text("model_answer") and q.items("points"), q.id


def test_questions_without_a_check_cite_a_source() -> None:
    for q in all_questions():
        assert q.check or (q.source and q.source.strip()), q.id


def test_myths_quote_the_claim_and_correct_it() -> None:
    for q in iv.load_bank(myths=True):
        assert q.text("claim", "en") and q.text("claim", "zh") and q.text("correction", "zh"), q.id
        assert q.claim_source and "http" not in q.claim_source, q.id


# ----------------------------------------------------------------------------------------------
# this helper's files: sizes and mix
@pytest.mark.parametrize("name", MY_FILES)
def test_each_topic_file_has_a_mix_of_kinds_and_difficulties(name: str) -> None:
    qs, problems = bank.read_file(bank.DATA_DIR / name)
    assert problems == []
    assert len(qs) >= 16
    assert {q.kind for q in qs} == set(iv.KINDS)
    assert {q.difficulty for q in qs} == set(iv.DIFFICULTIES)
    checkable = [q for q in qs if q.kind in ("numeric", "single", "multiple")]
    assert sum(q.check is not None for q in checkable) >= len(checkable) - 1  # at most one source-only question


# ----------------------------------------------------------------------------------------------
# corruption: a wrong stored answer of every kind is reported, with what was computed and stored
def _first(kind: str, **extra) -> iv.Question:
    for q in all_questions():
        if q.kind == kind and q.check and all(getattr(q, k) is not None for k in extra):
            return q
    raise AssertionError(f"no checked {kind} question")


def test_a_corrupted_numeric_answer_is_reported() -> None:
    q = iv.get_question("fp8-e4m3fn-max")
    bad = dataclasses.replace(q, answer=480.0)
    (p,) = iv.verify([bad])
    assert p.question_id == q.id and p.kind == "check"
    assert "448" in p.message and "480" in p.message


@pytest.mark.parametrize("kind", ["numeric", "single", "multiple", "open"])
def test_a_corrupted_answer_of_each_kind_is_reported(kind: str) -> None:
    q = _first(kind)
    assert iv.verify([q]) == []
    if kind == "numeric":
        bad = dataclasses.replace(q, answer=q.answer * 3 + 1)
    elif kind == "single":
        other = next(x for x in q.letters if x != q.answer)
        bad = dataclasses.replace(q, answer=other)
    elif kind == "multiple":
        wrong = tuple(sorted(set(q.letters) - set(q.answer))) or q.answer[:-1] or q.letters[:1]
        bad = dataclasses.replace(q, answer=wrong)
    else:
        expect = q.check_expect
        bad = dataclasses.replace(q, check_expect=(expect * 2 + 1) if isinstance(expect, float) else "wrong")
    problems = iv.verify([bad])
    assert [p.question_id for p in problems] == [q.id]
    assert problems[0].kind == "check" and "computed" in problems[0].message


def test_every_checked_question_fails_when_its_answer_is_corrupted() -> None:
    missed = []
    for q in all_questions():
        if not q.check:
            continue
        if q.kind == "numeric":
            bad = dataclasses.replace(q, answer=q.answer * 1.5 + 7)
        elif q.kind == "single":
            bad = dataclasses.replace(q, answer=next(x for x in q.letters if x != q.answer))
        elif q.kind == "multiple":
            flipped = tuple(sorted(set(q.letters) ^ {q.letters[0]})) or (q.letters[1],)
            bad = dataclasses.replace(q, answer=flipped)
        else:
            bad = dataclasses.replace(q, check_expect="corrupted")
        if not checks.check_question(bad):
            missed.append(q.id)
    assert missed == []


def test_a_failing_check_is_reported_not_raised() -> None:
    q = dataclasses.replace(iv.get_question("fp8-e4m3fn-max"), check="fl.get_format('no-such-format').max")
    (p,) = iv.verify([q])
    assert p.kind == "check" and "ValueError" in p.message


# ----------------------------------------------------------------------------------------------
# schema errors, one by one
GOOD = textwrap.dedent('''
    topic = "fp8"
    [[question]]
    id = "t-one"
    difficulty = "easy"
    kind = "single"
    tags = ["t"]
    prompt.en = "Which?"
    prompt.zh = "哪个？"
    hints.en = ["h"]
    hints.zh = ["提示"]
    explanation.en = "Because."
    explanation.zh = "因为。"
    choices.en = ["a", "b"]
    choices.zh = ["甲", "乙"]
    answer = "A"
    check = "[True, False]"
''')


def problems_of(text: str) -> list[str]:
    qs, problems = bank.parse_questions(tomllib.loads(text), "t.toml")
    problems += bank.cross_problems(qs)
    return [p.message for p in problems]


def test_the_good_example_is_clean() -> None:
    assert problems_of(GOOD) == []


@pytest.mark.parametrize("edit, expected", [
    (lambda s: s.replace('prompt.zh = "哪个？"\n', ""), "prompt.zh is missing"),
    (lambda s: s.replace('prompt.zh = "哪个？"', 'prompt.zh = "   "'), "prompt.zh is missing or empty"),
    (lambda s: s.replace('prompt.zh = "哪个？"', 'prompt.zh = "Which?"'), "no Chinese characters"),
    (lambda s: s.replace('choices.zh = ["甲", "乙"]', 'choices.zh = ["甲"]'), "choices.en has 2 entries but choices.zh has 1"),
    (lambda s: s.replace('answer = "A"', 'answer = "C"'), "one letter of ('A', 'B')"),
    (lambda s: s.replace('difficulty = "easy"', 'difficulty = "trivial"'), "difficulty must be one of"),
    (lambda s: s.replace('kind = "single"', 'kind = "essay"'), "kind must be one of"),
    (lambda s: s.replace('id = "t-one"', 'id = "T One"'), "id must be lowercase"),
    (lambda s: s.replace('tags = ["t"]', "tags = []"), "tags must be a non-empty list"),
    (lambda s: s.replace('hints.zh = ["提示"]', 'hints.zh = ["提示", "再一个"]'), "hints.en has 1 entries but hints.zh has 2"),
    (lambda s: s.replace('check = "[True, False]"', ""), "needs a source"),
    (lambda s: s + 'explaination.en = "typo"\n', "unknown keys ['explaination']"),
    (lambda s: s.replace('tags = ["t"]', 'tags = ["myth"]'), "claim is missing"),
    (lambda s: s + 'unit = "GiB"\n', "unit does not belong to a single-choice question"),
    (lambda s: s + s.split("\n", 2)[2], "duplicate id"),
])
def test_each_schema_error_is_reported(edit, expected: str) -> None:
    messages = problems_of(edit(GOOD))
    assert any(expected in m for m in messages), messages


def test_numeric_questions_need_a_unit_and_one_tolerance() -> None:
    text = GOOD.replace('kind = "single"', 'kind = "numeric"').replace('answer = "A"', "answer = 1.5")
    text = text.replace('choices.en = ["a", "b"]\n', "").replace('choices.zh = ["甲", "乙"]\n', "")
    messages = problems_of(text.replace('check = "[True, False]"', 'check = "1.5"'))
    assert any("needs unit" in m for m in messages) and any("exactly one of tolerance" in m for m in messages)
    fixed = text.replace('check = "[True, False]"', 'check = "1.5"\nunit = "bits"\ntolerance = 0.0')
    assert problems_of(fixed) == []


def test_a_toml_syntax_error_is_one_load_problem(tmp_path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text('topic = "fp8"\n[[question]\nid = "x"\n', encoding="utf-8")
    qs, problems = bank.read_file(path)
    assert qs == [] and len(problems) == 1 and problems[0].kind == "load" and "broken.toml" in str(problems[0])


def test_read_bank_reports_every_file_of_a_folder(tmp_path) -> None:
    (tmp_path / "a.toml").write_text(GOOD, encoding="utf-8")
    (tmp_path / "b.toml").write_text(GOOD.replace('answer = "A"', 'answer = "B"'), encoding="utf-8")
    qs, problems = bank.read_bank(tmp_path)
    assert len(qs) == 2
    assert any("duplicate id" in p.message for p in problems)


# ----------------------------------------------------------------------------------------------
# the loader's filters and errors
def test_load_bank_filters_combine() -> None:
    qs = iv.load_bank(topic=["fp8", "microscaling"], difficulty="hard", kind=("numeric", "single"))
    assert qs and all(q.topic in ("fp8", "microscaling") and q.difficulty == "hard" for q in qs)
    assert all(q.kind in ("numeric", "single") for q in qs)
    tagged = iv.load_bank(tags="e4m3")
    assert tagged and all("e4m3" in q.tags for q in tagged)
    assert all(not q.is_myth for q in iv.load_bank(myths=False))


@pytest.mark.parametrize("kwargs, error", [({"topic": "fp9"}, ValueError), ({"kind": 3}, TypeError),
                                           ({"myths": "yes"}, TypeError)])
def test_load_bank_rejects_bad_filters(kwargs, error) -> None:
    with pytest.raises(error):
        iv.load_bank(**kwargs)


def test_get_question_unknown_id() -> None:
    with pytest.raises(KeyError, match="no question with id"):
        iv.get_question("nope")


def test_questions_are_frozen() -> None:
    q = iv.get_question("fp8-e4m3fn-max")
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.answer = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        q.prompt["en"] = "changed"  # type: ignore[index]


def test_the_author_command_reports_and_exits_nonzero(tmp_path) -> None:
    from fp8lab.interview.__main__ import main

    broken = tmp_path / "x.toml"
    broken.write_text(GOOD.replace('answer = "A"', 'answer = "B"'), encoding="utf-8")
    assert main([str(broken)]) == 1
    assert main(["fp8.toml"]) == 0


def test_the_interview_imports_nothing_heavy_beyond_fp8lab_itself() -> None:
    code = textwrap.dedent("""
        import json, sys
        import fp8lab
        before = set(sys.modules)
        import fp8lab.interview as iv
        from fp8lab.cli import main
        iv.load_bank(); main(["quiz", "--list"])
        added = set(sys.modules) - before
        print(json.dumps(sorted(m for m in added if m.split(".")[0] in
                                {"torch", "ipywidgets", "matplotlib", "IPython", "nbformat", "pandas"})))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []
