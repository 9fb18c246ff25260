"""The labs' grading messages are bilingual: one table of (English, Chinese) templates, each message one string.

Oracles: the term base (``fp8lab.terms.check_zh``), the numbers of each message (the same digit runs in
both halves), the placeholders of each template pair, and real failing checks, guards and self-grading
runs, whose messages must carry both halves. The checker is shown to catch broken pairs.
"""

from __future__ import annotations

import copy
import pickle
import re
from collections import Counter

import nbformat
import numpy as np
import pytest

import fp8lab as fl
from fp8lab.labs import messages
from fp8lab.labs.catalog import repo_root
from fp8lab.labs.feedback import expect_close, expect_equal, expect_raises
from fp8lab.labs.guard import ShortcutError, no_shortcut
from fp8lab.labs.messages import TABLE, SEP, ZH_MARK, Text, halves, labelled, phrase, placeholders, say
from fp8lab.terms import check_zh

_CJK = re.compile(r"[\u3400-\u9fff]")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _samples(en: str) -> dict[str, str]:
    """A sample value per placeholder, each with its own number (a placeholder dropped or doubled changes the numbers)."""
    return {name: f"<{name}:{100 + i}>" for i, name in enumerate(dict.fromkeys(placeholders(en)))}


def _problems(en: str, zh: str) -> list[str]:
    """What is wrong with one (English, Chinese) template pair; empty when nothing is."""
    out = []
    if sorted(placeholders(en)) != sorted(placeholders(zh)):
        out.append(f"placeholders differ: {placeholders(en)} vs {placeholders(zh)}")
        return out
    fields = _samples(en)
    en_text, zh_text = en.format(**fields), zh.format(**fields)
    if _CJK.search(en_text):
        out.append(f"Chinese in the English half: {en_text!r}")
    if not _CJK.search(zh_text):
        out.append(f"no Chinese in the Chinese half: {zh_text!r}")
    out += [f"term: {p}" for p in check_zh(zh_text, en_text)]
    if Counter(_NUMBER.findall(en_text)) != Counter(_NUMBER.findall(zh_text)):
        out.append(f"numbers differ: {sorted(_NUMBER.findall(en_text))} vs {sorted(_NUMBER.findall(zh_text))}")
    return out


@pytest.mark.parametrize("key", sorted(TABLE))
def test_every_message_has_a_chinese_half_with_the_same_placeholders_numbers_and_terms(key):
    en, zh = TABLE[key]
    assert _problems(en, zh) == []
    text = phrase(key, **_samples(en))
    assert str(text) == say(key, **_samples(en))
    assert halves(text) == (text.en, text.zh)  # the joined string splits back into its halves


@pytest.mark.parametrize("en,zh,why", [
    ("{what}: expected {want}, got {got}", "{what}：期望 {want}", "placeholders differ"),
    ("the sign of zero differs", "the sign of zero differs", "no Chinese"),
    ("a subnormal value", "一个非规格化数", "term"),
    ("expected 3 items", "期望 2 项", "numbers differ"),
    ("ran past {seconds} s", "运行超过 {seconds} 秒，重试 1 次", "numbers differ"),
])
def test_the_checker_catches_a_broken_pair(en, zh, why):
    assert any(p.startswith(why) for p in _problems(en, zh)), _problems(en, zh)


def test_a_table_with_a_missing_chinese_placeholder_is_refused_at_import():
    with pytest.raises(ValueError, match="placeholders"):
        messages._validate({"bad": ("{what}: expected {want}", "{what}：期望")})
    with pytest.raises(ValueError, match="bare name"):
        messages._validate({"bad": ("{x:.3g}", "{x:.3g} 个")})


def test_one_line_messages_join_with_a_slash_and_longer_ones_with_a_chinese_block():
    assert say("visible_test") == "visible test" + SEP + "可见测试"
    lines = Text("a: 2 / 3\nb", "甲：2 / 3\n乙")
    assert str(lines) == "a: 2 / 3\nb\n" + ZH_MARK + "甲：2 / 3\n乙"
    assert halves(lines) == ("a: 2 / 3\nb", "甲：2 / 3\n乙")
    assert halves("ValueError: 1 / 0") == ("ValueError: 1 / 0", "ValueError: 1 / 0")  # one language: both halves
    t = phrase("random_case_seed", seed=7)
    for back in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert (back, back.en, back.zh) == (t, t.en, t.zh)


def _both(message: str, en_part: str, zh_part: str) -> tuple[str, str]:
    en, zh = halves(message)
    assert en != zh, message
    assert en_part in en and zh_part in zh and _CJK.search(zh), message
    assert check_zh(zh, en) == [], message
    assert Counter(_NUMBER.findall(en)) == Counter(_NUMBER.findall(zh)), message
    return en, zh


def test_failing_checks_say_it_in_both_languages():
    with pytest.raises(AssertionError) as e:
        expect_equal(-0.0, 0.0, what="decode(0x80)")
    _both(str(e.value), "(the sign of zero differs)", "零的符号不同")
    with pytest.raises(AssertionError) as e:
        expect_equal([1.0, 2.0, 4.0], np.array([1.0, 2.0, 3.0]), what="f(c)", inputs=["0x01", "0x02", "0x03"])
    en, zh = _both(str(e.value), "at [2] for input 0x03: expected 3.0, got 4.0", "输入 0x03：期望 3.0，得到 4.0")
    assert str(e.value).splitlines()[2].startswith(ZH_MARK)
    with pytest.raises(AssertionError) as e:
        expect_equal(np.zeros(2), np.zeros(3), what="f(x)")
    _both(str(e.value), "expected shape (3,), got shape (2,)", "期望形状 (3,)，得到形状 (2,)")
    with pytest.raises(AssertionError) as e:
        expect_close(0.31, 0.3, rel=0.01, what="mean error")
    _both(str(e.value), "expected 0.3 within 0.003, got 0.31", "容差 0.003")
    with pytest.raises(AssertionError) as e:
        expect_raises(ValueError, lambda: 3, what="g()")
    _both(str(e.value), "expected ValueError, but it returned 3", "但它返回了 3")
    with pytest.raises(AssertionError) as e:
        expect_raises((ValueError, TypeError), int, "7")
    _both(str(e.value), "expected ValueError or TypeError", "ValueError 或 TypeError")


def test_the_guard_says_it_in_both_languages():
    def cheat(x):
        return fl.quantize(x, "e4m3")

    with pytest.raises(ShortcutError) as e:
        with no_shortcut(cheat) as f:
            f(0.3)
    _both(str(e.value), "cheat may not use fp8lab (through the global name 'fl')", "不可使用 fp8lab（通过全局名称 'fl'）")

    def detour(x):
        return g(x)

    g = fl.quantize  # noqa: F841 - reached through the closure
    with pytest.raises(ShortcutError) as e:
        with no_shortcut(detour, allow=("fp8lab:decode",)) as f:
            f(0.3)
    _both(str(e.value), "(allowed: fp8lab.decode)", "（允许：fp8lab.decode）")


def test_a_self_grading_failure_line_carries_both_halves(tmp_path):
    lab = "02_bf16_rounding"
    nb = nbformat.read(str(repo_root() / "exercises" / lab / f"{lab}.ipynb"), as_version=4)
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("grade_id") == "bf16_truncate":
            c.source = "import numpy as np\n\ndef bf16_truncate(x):\n    return np.asarray(x, dtype=np.float32) * 2"
    path = tmp_path / lab / f"{lab}.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, str(path))
    from fp8lab.labs.selfgrade import grade_random

    result = grade_random(path, seed=3)
    task = next(t for t in result.tasks if t.id == "bf16_truncate")
    visible, random = task.messages
    assert visible.startswith("visible test: AssertionError: ") and random.startswith("random case (seed 3): AssertionError: ")
    _both(visible, "expected", "可见测试：AssertionError: ")
    _both(random, "expected", "随机用例（种子 3）：AssertionError: ")
    report = result.text()
    assert report.splitlines()[1] == f"{ZH_MARK}{lab}：{result.points:g} / 10 分（可见测试与随机用例，种子 3）"


def test_a_label_goes_into_each_half_of_a_message():
    line = labelled(phrase("visible_test"), "RemoteError: f: expected 2, got 3 / f：期望 2，得到 3")
    assert (line.en, line.zh) == ("visible test: RemoteError: f: expected 2, got 3", "可见测试：RemoteError: f：期望 2，得到 3")


def test_the_runner_in_the_sandbox_reads_the_table_beside_it():
    from fp8lab.labs.sandbox import Sandbox, sandbox_problem

    with Sandbox(["numpy"], unsafe=sandbox_problem() is not None) as box:
        assert box.run("def f():\n    return object()", "c", timeout=30).ok
        with pytest.raises(NameError) as e:
            box.call("g", (), {}, timeout=30)
        _both(str(e.value), "name 'g' is not defined as a function", "名称 'g' 没有定义为函数")
        with pytest.raises(TypeError) as e:
            box.call("f", (), {}, timeout=30)
        _both(str(e.value), "f returned a object, which the grader does not read back", "评分程序不会读回")
