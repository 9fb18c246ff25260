"""What a learner reads from lab grading, in English and Chinese: one table of templates, one way to join them.

One nbgrader assignment serves a class that reads either edition, so every message of grading and
self-grading carries both languages in ONE string:

* a message of one line is the English sentence, ``" / "``, the Chinese sentence::

      f(1): expected 2.0, got 3.0 / f(1)：期望 2.0，得到 3.0

* a message of several lines (or one whose English holds ``" / "``, as a value may) is the English
  block, then the Chinese block, whose first line starts with ``中文：``::

      f(x): 1 of 2 values differ; the first:
        at [1] for input 2.1: expected 2.0, got 3.0
      中文：f(x)：2 个数值中有 1 个不同；前几个：
        位置 [1]，输入 2.1：期望 2.0，得到 3.0

:data:`TABLE` holds each message as an (English template, Chinese template) pair with the same
named placeholders (``{what}``, never a format spec: callers pass text). Numbers, code names,
values and :func:`fp8lab.labs.feedback.describe` output are placeholders, so they are inserted
identically in both halves. :func:`say` formats both templates and joins them; :func:`phrase` does
the same and keeps the halves (a :class:`Text`, which *is* the joined string), so that a phrase
put into another message's placeholder goes into each half in its own language. :func:`halves`
splits a joined message again (self-grading labels the messages it reads back from a notebook).
Only punctuation joins texts outside the table: :func:`joined` (``;`` / ``；``), :func:`noted`
(``( )`` / ``（ ）``), :func:`labelled` (``:`` / ``：``); every template has Chinese words.

Chinese terms follow the project's term base (``fp8lab/data/termbase.toml``, :func:`fp8lab.terms.check_zh`).

This module needs only the standard library: the sandbox's runner (:mod:`fp8lab.labs.runner`), which
cannot import fp8lab, loads it from its own folder.

>>> say("expected_got", what="f(1)", want="2.0", got="3.0")
'f(1): expected 2.0, got 3.0 / f(1)：期望 2.0，得到 3.0'
>>> why = phrase("sign_of_zero")
>>> print(say("expected_got_because", what="decode(0x80)", want="0.0", got="-0.0", why=why))
decode(0x80): expected 0.0, got -0.0 (the sign of zero differs) / decode(0x80)：期望 0.0，得到 -0.0（零的符号不同）
>>> halves(say("visible_test"))
('visible test', '可见测试')
"""

from __future__ import annotations

import re
import string
from typing import Any, Iterable

__all__ = ["TABLE", "SEP", "ZH_MARK", "Text", "say", "phrase", "join", "halves", "joined", "either", "text_of",
           "labelled", "noted", "placeholders"]

#: between the English and the Chinese sentence of a one-line message
SEP = " / "
#: the start of the Chinese block of a message of several lines
ZH_MARK = "中文："

_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")

#: every message a learner sees from grading: key -> (English template, Chinese template)
TABLE: dict[str, tuple[str, str]] = {
    # ---- feedback.py: expect_equal, expect_close, expect_raises -------------------------------------
    "expected_got": ("{what}: expected {want}, got {got}", "{what}：期望 {want}，得到 {got}"),
    "expected_got_because": ("{what}: expected {want}, got {got} ({why})", "{what}：期望 {want}，得到 {got}（{why}）"),
    "sign_of_zero": ("the sign of zero differs", "零的符号不同"),
    "want_bool": ("expected a bool, got {type}", "期望布尔值（bool），得到 {type}"),
    "want_integer": ("expected an integer, got {type}", "期望整数，得到 {type}"),
    "want_number": ("expected a number, got {type}", "期望一个数，得到 {type}"),
    "want_items": ("expected {n} items, got {type}", "期望 {n} 项，得到 {type}"),
    "want_items_of": ("expected {n} items, got {type} of {m}", "期望 {n} 项，得到含 {m} 项的 {type}"),
    "want_array_like": ("{what}: expected an array like {want}, got {type}", "{what}：期望类似 {want} 的数组，得到 {type}"),
    "want_numbers": ("{what}: expected numbers, got {got} (a {type}){at}{input}",
                     "{what}：期望数值，得到 {got}（{type} 类型）{at}{input}"),
    "at_index_suffix": (" at [{index}]", "，位置 [{index}]"),
    "for_input": (" for input {input}", "，输入 {input}"),
    "shape_differs": ("{what}: expected shape {want}, got shape {got} ({value})",
                      "{what}：期望形状 {want}，得到形状 {got}（{value}）"),
    "dtype_differs": ("{what}: expected dtype {want}, got dtype {got}", "{what}：期望数据类型 {want}，得到数据类型 {got}"),
    "values_differ": ("{what}: {n} of {total} values differ; the first:", "{what}：{total} 个数值中有 {n} 个不同；前几个："),
    "at_index": ("at [{index}]", "位置 [{index}]"),
    "at_the_value": ("at the value", "该数值"),
    "element_differs": ("  {where}{input}: expected {want}, got {got}", "  {where}{input}：期望 {want}，得到 {got}"),
    "want_number_like": ("{what}: expected a number like {want}, got {type}", "{what}：期望类似 {want} 的数，得到 {type}"),
    "not_close": ("{what}: expected {want} within {tol}, got {got} (off by {diff})",
                  "{what}：期望 {want}（容差 {tol}），得到 {got}（相差 {diff}）"),
    "values_off": ("{what}: {n} of {total} values are off by more than the tolerance; the first:",
                   "{what}：{total} 个数值中有 {n} 个超出容差；前几个："),
    "element_off": ("  at {index}: expected {want} within {tol}, got {got}", "  位置 {index}：期望 {want}（容差 {tol}），得到 {got}"),
    "raised_other": ("{label}: expected {names}, got {error}: {detail}", "{label}：期望 {names}，得到 {error}: {detail}"),
    "returned_instead": ("{label}: expected {names}, but it returned {got}", "{label}：期望 {names}，但它返回了 {got}"),
    "either": ("{a} or {b}", "{a} 或 {b}"),
    "the_function": ("the function", "该函数"),
    "result": ("result", "结果"),
    # ---- guard.py: ShortcutError ---------------------------------------------------------------------
    "may_not_use": ("{name} may not use {found}; this task asks you to implement it yourself (not allowed here: {policy})",
                    "{name} 不可使用 {found}；本任务要求你自己实现它（此处不允许：{policy}）"),
    "called_forbidden": ("called {ref}, which this task asks you to implement yourself", "调用了 {ref}，而本任务要求你自己实现它"),
    "cast_forbidden": ("{func} with {ref}: this task asks you to do the cast yourself",
                       "{func} 使用了 {ref}：本任务要求你自己完成类型转换"),
    "called_while_tests_ran": ("{name} called {ref} while its tests ran; this task asks you to implement it yourself "
                               "(not allowed here: {policy})",
                               "{name} 在测试运行时调用了 {ref}；本任务要求你自己实现它（此处不允许：{policy}）"),
    "used_while_tests_ran": ("{name} used {ref} while its tests ran; this task asks you to implement it yourself "
                             "(not allowed here: {policy})",
                             "{name} 在测试运行时使用了 {ref}；本任务要求你自己实现它（此处不允许：{policy}）"),
    "policy_allowed": ("{forbidden} (allowed: {allowed})", "{forbidden}（允许：{allowed}）"),
    "via_global": ("through the global name {name}", "通过全局名称 {name}"),
    "via_closure": ("the closure variable {var} of {function}", "{function} 的闭包变量 {var}"),
    "via_default": ("a default argument of {function}", "{function} 的默认参数"),
    "via_bound_method": ("a bound method", "一个绑定方法"),
    "via_itself": ("the function itself", "函数本身"),
    "found_tamper": ("{name} (in {function}: it could reach code without naming it)",
                     "{name}（在 {function} 中：它能不写出名字就访问到代码）"),
    "found_name": ("{ref} (the name {name} in {function})", "{ref}（{function} 中的名称 {name}）"),
    "found_import": ("{ref} (imported in {function})", "{ref}（在 {function} 中导入）"),
    "found_string": ("{ref} (the string {text} in {function})", "{ref}（{function} 中的字符串 {text}）"),
    "object_from": ("a {type} from {module}", "来自 {module} 的 {type} 对象"),
    "an_object": ("a {type} object", "{type} 对象"),
    # ---- preprocess.py: the source scan's verdict, the hidden tests left out of feedback ----------------
    "scan_refused": ("the source scan refused this submission's code, so this test cell scores zero:",
                     "源码扫描拒绝了这份提交的代码，因此本测试单元格得零分："),
    "shortcut_found": ("shortcut or tampering found by the grader: {why}", "评分程序发现了捷径或篡改：{why}"),
    "hidden_tests_left_out": ("(hidden tests: run by the grader, not shown)", "（隐藏测试：由评分程序运行，不显示）"),
    # ---- sandbox.py: timeouts, a process that ended, answers over the cap ------------------------------
    "timeout_stopped": ("ran past its time limit of {seconds} s and was stopped", "运行超过 {seconds} 秒的时间上限（超时），已被停止"),
    "timeout": ("ran past its time limit of {seconds} s", "运行超过 {seconds} 秒的时间上限（超时）"),
    "sandbox_not_running": ("the sandbox is not running", "沙箱没有在运行"),
    "process_had_ended": ("the submission's process had ended", "提交的进程已经结束"),
    "process_ended": ("the submission's process ended", "提交的进程结束了"),
    "process_ended_status": ("the submission's process ended (exit status {status})", "提交的进程结束了（退出状态 {status}）"),
    "answer_too_large": ("the submission sent an answer larger than {mib} MiB", "提交发回的答案超过 {mib} MiB"),
    "not_protocol": ("the submission's process answered something that is not the grader's protocol",
                     "提交的进程回复了不符合评分程序协议的内容"),
    "unreadable_value": ("{name} returned a value the grader cannot read: {error}", "{name} 返回了评分程序无法读取的值：{error}"),
    "more_values": ("{name}: the submission's process answered more values than calls", "{name}：提交的进程回复的值比调用次数多"),
    "fewer_values": ("{name}: the submission's process answered fewer values than calls", "{name}：提交的进程回复的值比调用次数少"),
    # ---- runner.py (inside the sandbox): what the wire does not carry ----------------------------------
    "not_a_function": ("name {name} is not defined as a function", "名称 {name} 没有定义为函数"),
    "returned_wire": ("{name} returned {what}", "{name} 返回了 {what}"),
    "wire_too_deep": ("a value nested more than {depth} levels deep", "嵌套超过 {depth} 层的值"),
    "wire_numpy_dtype": ("a numpy value of dtype {dtype}, which the grader does not read back",
                         "数据类型为 {dtype} 的 numpy 值，评分程序不会读回"),
    "wire_dict_keys": ("a dict whose keys are not all strings", "键不全是字符串的字典（dict）"),
    "wire_type": ("a {type}, which the grader does not read back (send numbers, strings, tuples, lists, dicts or numpy arrays)",
                  "{type} 类型的值，评分程序不会读回（请发回数、字符串、元组、列表、字典或 numpy 数组）"),
    "wire_bad_int": ("a malformed big integer", "格式错误的大整数"),
    "wire_bad_float": ("a malformed non-finite float", "格式错误的非有限浮点数"),
    "wire_dtype_not_carried": ("dtype {dtype} is not carried", "不传输数据类型 {dtype}"),
    "wire_bad_array": ("an array whose data does not fit its shape", "数据与形状不符的数组"),
    "wire_unknown_tag": ("unknown wire tag {tag}", "未知的传输标记 {tag}"),
    "wire_not_value": ("not a value of the wire format: {text}", "不是传输格式中的值：{text}"),
    "wire_not_value_because": ("not a value of the wire format ({error})", "不是传输格式中的值（{error}）"),
    # ---- harness.py: what the grader saw while it ran a notebook ---------------------------------------
    "replay_failed": ("replaying cell {cell} after a restart: {error}", "重启后重放单元格 {cell} 时：{error}"),
    "restart_failed": ("the submission could not be restarted ({error})", "提交无法重新启动（{error}）"),
    "cell_problem": ("cell {cell} {problem}", "单元格 {cell} {problem}"),
    "this_cell_problem": ("this cell {problem}", "本单元格{problem}"),
    "answer_problem": ("the answer {problem}", "答案{problem}"),
    "cell_died": ("cell {cell}: {error}", "单元格 {cell}：{error}"),
    "cell_output_over": ("cell {cell} printed {n} characters over the output cap", "单元格 {cell} 的输出超出上限 {n} 个字符"),
    "output_cut": ("[output cut: {n} more characters were printed; the grader keeps {mib} MiB per cell]",
                   "[输出已省略：另有 {n} 个字符未显示；评分程序每个单元格只保留 {mib} MiB]"),
    "calling_died": ("calling {name}: {error}", "调用 {name} 时：{error}"),
    "answer_cell_failed": ("{error}: its answer cell {cell} failed with {cell_error}",
                           "{error}：它的答案单元格 {cell} 运行失败：{cell_error}"),
    "answer_cut": ("answer cell {cell} was cut to {n} characters", "答案单元格 {cell} 只保留了前 {n} 个字符"),
    "no_answer_cell": ("no answer cell with id {cell} in the submission: graded as the blank exercise",
                       "提交中没有 id 为 {cell} 的答案单元格：按空白练习评分"),
    "message_cut": ("... (message cut)", "……（消息过长，其余部分已省略）"),
    # ---- selfgrade.py: the report of `fp8lab labs grade`, and why an attempt cannot be graded ------------
    "summary": ("{lab}: {points} / {max} points ({source}, seed {seed})", "{lab}：{points} / {max} 分（{source}，种子 {seed}）"),
    "source_hidden": ("hidden tests", "隐藏测试"),
    "source_random": ("visible tests and random cases", "可见测试与随机用例"),
    "visible_test": ("visible test", "可见测试"),
    "hidden_tests_seed": ("hidden tests (random cases, seed {seed})", "隐藏测试（随机用例，种子 {seed}）"),
    "random_case_seed": ("random case (seed {seed})", "随机用例（种子 {seed}）"),
    "test_cell_edited": ("the test cell {cell} was edited; copy it back from {path}", "测试单元格 {cell} 被改动过；请从 {path} 复制回原样"),
    "test_cell_missing": ("the notebook has no test cell {cell}; copy it back from {path}",
                          "笔记本中没有测试单元格 {cell}；请从 {path} 复制回来"),
    "random_did_not_run": ("the random cases did not run", "随机用例没有运行"),
    "locked_cell_edited": ("its locked cell {cell} was edited; copy it back from {path}",
                           "它的锁定单元格 {cell} 被改动过；请从 {path} 复制回原样"),
    "cannot_be_graded": ("{path} cannot be graded: {why}", "{path} 无法评分：{why}"),
    "no_answer_for": ("no answer cell for {task}", "没有 {task} 的答案单元格"),
    "answer_syntax_error": ("the answer cell of {task} has a syntax error at line {line}: {error}",
                            "{task} 的答案单元格第 {line} 行有语法错误：{error}"),
    "no_function": ("no answer cell defines the function {task}", "没有答案单元格定义函数 {task}"),
    "which_lab": ("cannot tell which lab {path} is: name it <lab>.ipynb or pass --lab; the labs are {labs}",
                  "无法判断 {path} 属于哪个实验：请把它命名为 <lab>.ipynb 或传入 --lab；实验有 {labs}"),
    "is_folder": ("{path} is a folder, not a notebook file", "{path} 是文件夹，不是笔记本文件"),
    "not_notebook_file": ("{path} is not a notebook file", "{path} 不是笔记本文件"),
    "cannot_read": ("cannot read {path}: {error}", "无法读取 {path}：{error}"),
    "empty_file": ("{path} is empty, not a Jupyter notebook", "{path} 是空文件，不是 Jupyter 笔记本"),
    "not_jupyter": ("{path} is not a Jupyter notebook: {why}", "{path} 不是 Jupyter 笔记本：{why}"),
    "not_utf8": ("not UTF-8 text (byte {byte})", "不是 UTF-8 文本（字节 {byte}）"),
    "json_ends_early": ("its JSON ends early at line {line} column {column}", "它的 JSON 在第 {line} 行第 {column} 列提前结束"),
    "json_invalid": ("invalid JSON ({error}) at line {line} column {column}", "JSON 无效（{error}），位于第 {line} 行第 {column} 列"),
    "json_too_deep": ("its JSON is nested too deeply", "它的 JSON 嵌套太深"),
    "json_not_notebook": ("expected a JSON object with a 'cells' list and an 'nbformat' version, got {got}",
                          "期望含 'cells' 列表和 'nbformat' 版本的 JSON 对象，得到 {got}"),
    "old_nbformat": ("{path} is a version {version} notebook; the labs are version 4 notebooks (open and save it in JupyterLab)",
                     "{path} 是第 {version} 版的笔记本；实验是第 4 版的笔记本（请在 JupyterLab 中打开并保存）"),
    "invalid_notebook": ("{path} is not a valid Jupyter notebook: {error}", "{path} 不是有效的 Jupyter 笔记本：{error}"),
    "no_answer_cells": ("{path} has none of the answer cells of {lab} (cells with grade_id {ids}): start from {exercise}",
                        "{path} 中没有 {lab} 的任何答案单元格（grade_id 为 {ids} 的单元格）：请从 {exercise} 开始"),
    "nbgrader_failed": ("nbgrader could not grade {path}:", "nbgrader 无法为 {path} 评分："),
    # ---- grading.py: why a submission is ungradeable, the export's reason column, stderr ----------------
    "file_too_big": ("a {size} MiB file: a submitted notebook may have {limit} MiB at most",
                     "{size} MiB 的文件：提交的笔记本最多 {limit} MiB"),
    "unreadable_notebook": ("not a readable notebook ({error})", "不是可读的笔记本（{error}）"),
    "no_cells_list": ("not a Jupyter notebook (no list of cells)", "不是 Jupyter 笔记本（没有单元格列表）"),
    "ungradeable": ("ungradeable: {why}", "无法评分：{why}"),
    "did_not_finish": ("grading {student} did not finish: {lines}", "{student} 的评分没有完成：{lines}"),
    "see_log": ("see the nbgrader log", "见 nbgrader 日志"),
    "scan_could_not_run": ("scan could not run: {error}", "源码扫描无法运行：{error}"),
    "wrote_stderr": ("wrote to stderr (nbgrader scores that as a failure): {text}",
                     "向 stderr 写入了内容（nbgrader 将其计为失败）：{text}"),
    "no_submission": ("no submission collected", "没有收集到提交"),
    "late": ("{seconds} s after the due date; late penalty {penalty}", "晚于截止时间 {seconds} 秒；迟交扣分 {penalty}"),
    "flagged_formgrader": ("flagged in the formgrader", "已在 formgrader 中标记"),
}


def placeholders(template: str) -> list[str]:
    """The placeholder names of a template, in order (a name used twice is listed twice).

    >>> placeholders("{what}: expected {want}, got {got}")
    ['what', 'want', 'got']
    """
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


def _validate(table: dict[str, tuple[str, str]]) -> None:
    """Refuse a table whose two templates of a key differ in placeholders or use format specs (at import)."""
    for key, pair in table.items():
        if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(t, str) and t for t in pair)):
            raise ValueError(f"message {key!r}: expected a pair (English, Chinese) of templates, got {pair!r}")
        for template in pair:
            for _, name, spec, conversion in string.Formatter().parse(template):
                if name is not None and (not name.isidentifier() or spec or conversion):
                    raise ValueError(f"message {key!r}: placeholder {{{name}}} must be a bare name (callers pass text)")
        if sorted(placeholders(pair[0])) != sorted(placeholders(pair[1])):
            raise ValueError(f"message {key!r}: the English placeholders {placeholders(pair[0])} and the Chinese "
                             f"{placeholders(pair[1])} differ")


_validate(TABLE)


def join(en: str, zh: str) -> str:
    """One string of an English and a Chinese text, by the module's convention (equal halves: that text once).

    >>> join("visible test", "可见测试")
    'visible test / 可见测试'
    >>> print(join("a / b", "甲 / 乙"))
    a / b
    中文：甲 / 乙
    """
    if en == zh:
        return en
    if "\n" in en or "\n" in zh or SEP in en:
        return f"{en}\n{ZH_MARK}{zh}"
    return f"{en}{SEP}{zh}"


def halves(message: str) -> tuple[str, str]:
    """The (English, Chinese) halves of a message joined by :func:`join`; a message in one language is both halves.

    A one-line message splits at the first ``" / "`` with no Chinese before it and Chinese after it
    (an English half holds no ``" / "``: :func:`join` writes such a message on several lines).

    >>> halves("f: expected 2, got 3 / f：期望 2，得到 3")
    ('f: expected 2, got 3', 'f：期望 2，得到 3')
    >>> halves("ValueError: 1 / 0")
    ('ValueError: 1 / 0', 'ValueError: 1 / 0')
    """
    message = str(message)
    i = message.find("\n" + ZH_MARK)
    if i >= 0:
        return message[:i], message[i + 1 + len(ZH_MARK):]
    for m in re.finditer(re.escape(SEP), message):
        left, right = message[:m.start()], message[m.end():]
        if not _CJK.search(left) and _CJK.search(right):
            return left, right
    return message, message


class Text(str):
    """A bilingual text: the joined string itself, with its halves as ``.en`` and ``.zh``.

    Put into a placeholder of :func:`say` or :func:`phrase`, each half goes into its own language.

    >>> t = Text("hidden tests", "隐藏测试")
    >>> t, t.en, t.zh
    ('hidden tests / 隐藏测试', 'hidden tests', '隐藏测试')
    """

    en: str
    zh: str

    def __new__(cls, en: str, zh: str) -> "Text":
        self = super().__new__(cls, join(str(en), str(zh)))
        self.en, self.zh = str(en), str(zh)
        return self

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]  # pickling and copying keep the halves
        return self.en, self.zh


def _half(value: Any, lang: str) -> str:
    if isinstance(value, Text):
        return value.en if lang == "en" else value.zh
    return str(value)


def phrase(key: str, **fields: Any) -> Text:
    """The message ``key`` of :data:`TABLE` with ``fields`` filled in, as a :class:`Text`.

    A field that is a :class:`Text` goes into each half in its language; anything else is put in as ``str``.

    >>> phrase("random_case_seed", seed=5).zh
    '随机用例（种子 5）'
    """
    try:
        en, zh = TABLE[key]
    except KeyError:
        raise KeyError(f"no message {key!r} in fp8lab.labs.messages.TABLE") from None
    try:
        return Text(en.format_map({k: _half(v, "en") for k, v in fields.items()}),
                    zh.format_map({k: _half(v, "zh") for k, v in fields.items()}))
    except KeyError as err:
        raise KeyError(f"message {key!r} needs the field {err.args[0]!r}; it has {placeholders(en)}") from None


def say(key: str, **fields: Any) -> str:
    """The message ``key`` with ``fields`` filled in: English and Chinese in one string (see the module doc).

    >>> say("timeout_stopped", seconds=60)
    'ran past its time limit of 60 s and was stopped / 运行超过 60 秒的时间上限（超时），已被停止'
    """
    return phrase(key, **fields)


def joined(items: Iterable[Any], en_sep: str = "; ", zh_sep: str = "；") -> Text:
    """Texts (or plain values) in a row: the English halves with ``en_sep``, the Chinese halves with ``zh_sep``.

    >>> joined([Text("a", "甲"), "x"]).zh
    '甲；x'
    """
    items = list(items)
    return Text(en_sep.join(_half(i, "en") for i in items), zh_sep.join(_half(i, "zh") for i in items))


def noted(value: Any, note: Any) -> Text:
    """``value (note)`` in both languages (the Chinese with full-width parentheses).

    >>> noted("fp8lab", Text("imported in f", "在 f 中导入")).zh
    'fp8lab（在 f 中导入）'
    """
    return Text(f"{_half(value, 'en')} ({_half(note, 'en')})", f"{_half(value, 'zh')}（{_half(note, 'zh')}）")


def either(names: Iterable[Any]) -> Text:
    """``A or B or C`` in both languages (one name: itself).

    >>> either(["ValueError", "TypeError"])
    'ValueError or TypeError / ValueError 或 TypeError'
    """
    items = list(names)
    out: Any = items[0] if items else ""
    for name in items[1:]:
        out = phrase("either", a=out, b=name)
    return out if isinstance(out, Text) else Text(str(out), str(out))


def text_of(value: Any) -> Text:
    """A :class:`Text` for an exception or a message: its own halves when it carries them, else :func:`halves`.

    >>> text_of(AssertionError(phrase("visible_test"))).zh, text_of("plain").zh
    ('可见测试', 'plain')
    """
    if isinstance(value, BaseException):
        value = value.args[0] if len(value.args) == 1 and isinstance(value.args[0], Text) else str(value)
    if isinstance(value, Text):
        return value
    return Text(*halves(str(value)))


_ERROR_PREFIX = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception|Died|Exit|Interrupt|Warning): )+")


def labelled(label: Any, message: Any) -> Text:
    """``label: message`` in each language: the message's halves (:func:`halves`), its exception names in both.

    >>> labelled(phrase("visible_test"), "AssertionError: f: expected 2, got 3 / f：期望 2，得到 3")
    'visible test: AssertionError: f: expected 2, got 3 / 可见测试：AssertionError: f：期望 2，得到 3'
    """
    text = str(message)
    m = _ERROR_PREFIX.match(text)
    prefix = m.group(0) if m else ""
    en, zh = halves(text[len(prefix):]) if not isinstance(message, Text) else (message.en, message.zh)
    if isinstance(message, Text):
        prefix = ""
    return Text(f"{_half(label, 'en')}: {prefix}{en}", f"{_half(label, 'zh')}：{prefix}{zh}")
