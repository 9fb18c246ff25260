"""The bank's content rules over every question: one Chinese term per concept, figures with their model, GPU figures from fp8lab.hardware."""

from __future__ import annotations

import ast
import re

import pytest

from fp8lab import terms
from fp8lab.interview import load_bank
from fp8lab.interview.bank import TOPICS

BANK = load_bank()
_TEXTS = ("prompt", "explanation", "model_answer", "weak_answer", "claim", "correction")
_LISTS = ("hints", "choices", "points")


def pairs(q, fields=_TEXTS + _LISTS):
    """(field, English, Chinese) for every bilingual text of a question, list entries one by one."""
    for f in fields:
        m = getattr(q, f)
        if not m:
            continue
        if f in _TEXTS:
            yield f, m["en"], m["zh"]
        else:
            for i, (en, zh) in enumerate(zip(m["en"], m["zh"])):
                yield f"{f}[{i}]", en, zh


def english(q) -> str:
    return " ".join(en for _, en, _ in pairs(q))


@pytest.mark.parametrize("q", BANK, ids=lambda q: q.id)
def test_every_chinese_text_keeps_to_the_term_base(q):
    # a myth's claim is quoted as it circulates (often verbatim from a Chinese article), so it keeps its words
    problems = [f"{field}: {p}" for field, en, zh in pairs(q) if field != "claim" for p in terms.check_zh(zh, en)]
    assert problems == []


def test_the_term_check_finds_the_old_renderings_in_bank_like_text():
    # the renderings the bank used before the term base, in sentences of the bank's kind
    old = {"平局时取偶数尾数": "中点", "最小规格化数为 2^-6": "正规数", "每个二进制量级内等间距": "二进制区间",
           "E5M2 的二进制阶": "二进制区间", "amax 突变时会截断": "饱和", "TE 的当前缩放": "即时缩放",
           "FP32 张量级缩放因子": "逐张量缩放", "FP8 Tensor Core 峰值": "张量核心"}
    for zh, right in old.items():
        en = "amax jumps and it clips" if "截断" in zh else None
        problems = terms.check_zh(zh, en)
        assert problems and right in problems[0], (zh, problems)


@pytest.mark.parametrize("q", [q for q in BANK if q.check], ids=lambda q: q.id)
def test_no_check_is_bare_arithmetic_on_constants(q):
    # "3958 / 1979" restates a datasheet and would not notice a change of source data: a check computes,
    # with fp8lab (or numpy/math for pure mathematics), i.e. it calls something
    tree = ast.parse(q.check.strip())
    assert any(isinstance(node, ast.Call) for node in ast.walk(tree)), q.check


def test_bare_arithmetic_is_recognised():
    for bare, ok in (("3958 / 1979", False), ("M = 8192\nresult = 2 * M ** 3 / (4 * M ** 2)", False),
                     ("fl.hardware.get_gpu_spec('h100-sxm').ridge_point('fp8')", True)):
        assert any(isinstance(n, ast.Call) for n in ast.walk(ast.parse(bare))) is ok


_GPU_FIGURES = re.compile(r"TFLOPS|\bTOPS\b|[Rr]idge|[Aa]rithmetic intensity|TB/s|FLOP/byte|[Dd]atasheet")


@pytest.mark.parametrize("q", [q for q in BANK if q.check and _GPU_FIGURES.search(english(q))], ids=lambda q: q.id)
def test_gpu_figures_are_computed_from_fp8lab_hardware(q):
    assert "fl.hardware." in q.check or "fl.get_gpu" in q.check, q.check


_ACC_FIGURE = re.compile(r"\d(?:\.\d+)?e-\d|\d(?:\.\d+)?\s?%")
_ACC_MODEL = re.compile(r"14-bit|14 bits|13 mantissa|13-bit|accumulator", re.I)
_NAMED = re.compile(r"truncat|toward zero|nearest|measured", re.I)


@pytest.mark.parametrize("q", BANK, ids=lambda q: q.id)
def test_a_limited_accumulator_figure_names_its_rounding(q):
    # 3.5e-3 (truncating), 5.8e-4 (round to nearest) and DeepSeek-V3's measured 2% are different models
    bad = [field for field, en, _ in pairs(q, ("prompt", "explanation", "model_answer", "correction", "weak_answer"))
           if _ACC_MODEL.search(en) and _ACC_FIGURE.search(en) and not _NAMED.search(en)]
    assert bad == []


def test_mla_myth_states_baselines_and_is_settled_by_the_sizing_presets():
    q = next(q for q in BANK if q.id == "myth-mla-5-10x")
    text = english(q)
    for figure in ("34,560", "194,560", "5.63", "4.66", "93.3%", "6 bits"):
        assert figure in text, figure
    assert "fl.get_model" in q.check and "kv_elements_per_token" in q.check


def test_nf4_half_of_the_fp4_myth_is_right():
    q = next(q for q in BANK if q.id == "myth-fp4-fits-normal-better")
    assert q.kind == "multiple" and set(q.answer) == {"A", "B"}
    assert "NF4" in q.items("choices", "en")[0] and "UE8M0" in q.items("choices", "en")[1]


def test_hints_do_not_contradict_the_answer_count():
    # a hint that says "one of" the choices is false while the answer marks several false (hw-hopper-fp8-limits)
    for q in BANK:
        if q.kind != "multiple":
            continue
        wrong = len(q.letters) - len(q.answer)
        for hint in q.items("hints", "en"):
            if re.search(r"\bone of the (last|first) (two|three)\b.*\bfalse\b", hint, re.I):
                assert wrong == 1, (q.id, hint)
            m = re.search(r"\b(both|all three) of the (last|first) (two|three)\b.*\bfalse\b", hint, re.I)
            if m:
                assert wrong >= (2 if m.group(1).lower() == "both" else 3), (q.id, hint)


def test_every_topic_has_questions():
    have = {q.topic for q in BANK} | {"myths"}
    assert set(TOPICS) <= have
