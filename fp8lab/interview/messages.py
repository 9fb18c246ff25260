"""The user-facing phrases of the quiz, the widget and the grader, in English and Simplified Chinese.

>>> say("correct", "zh")
'正确。'
>>> say("answer_is", "en", answer="448")
'The answer is 448.'
>>> name("topic", "int8_fp4", "zh"), name("unit", "bytes", "zh")
('INT8 与 FP4', '字节')
"""

from __future__ import annotations

from .bank import LANGS

__all__ = ["MESSAGES", "NAMES", "say", "name", "source_name", "header"]

MESSAGES: dict[str, dict[str, str]] = {
    "correct": {"en": "Correct.", "zh": "正确。"},
    "wrong": {"en": "Not quite.", "zh": "不对。"},
    "answer_is": {"en": "The answer is {answer}.", "zh": "答案是 {answer}。"},
    "you_said": {"en": "You answered {response}.", "zh": "你的回答是 {response}。"},
    "within": {"en": "(accepted within {tol})", "zh": "（允许误差 {tol}）"},
    "unreadable": {"en": "Could not read that answer: {reason}", "zh": "无法识别这个回答：{reason}"},
    "expect_letter": {"en": "type one letter of {letters}", "zh": "请输入 {letters} 中的一个字母"},
    "expect_letters": {"en": "type one or more letters of {letters}, e.g. \"A C\"",
                       "zh": "请输入 {letters} 中的一个或多个字母，例如 \"A C\""},
    # why a number could not be read (fp8lab.interview.numbers.UnreadableAnswer)
    "too_long": {"en": "the answer is {n} characters long; at most {limit} are read",
                 "zh": "回答有 {n} 个字符，最多只读取 {limit} 个"},
    "no_number": {"en": "no number in {text}; type one such as 12, 2^-9, 1.5e-3 or 2⁸",
                  "zh": "{text} 中没有数；请输入一个数，例如 12、2^-9、1.5e-3 或 2⁸"},
    "unexpected_char": {"en": "cannot read the character {char} (U+{code}) in {text}",
                        "zh": "无法识别 {text} 中的字符 {char}（U+{code}）"},
    "radix_literal": {"en": "{text} looks like a hexadecimal, binary or octal literal; write the value in decimal",
                      "zh": "{text} 像是十六进制、二进制或八进制字面量；请写出十进制的值"},
    "comma_decimal": {"en": "a comma groups thousands (1,024), so {text} cannot be read; write decimals with a point (1.5)",
                      "zh": "逗号只用于千位分组（1,024），无法识别 {text}；小数请用小数点（1.5）"},
    "bad_grouping": {"en": "digits in {text} are not grouped in threes (1,024, 524 288, 1_000)",
                     "zh": "{text} 中的数字没有按三位分组（1,024、524 288、1_000）"},
    "two_points": {"en": "{text} has two decimal points", "zh": "{text} 有两个小数点"},
    "two_numbers": {"en": "two numbers in a row in {text}: join them with an operator (*, /, ^) or group digits in threes (524 288)",
                    "zh": "{text} 中两个数连在一起：请用运算符（*、/、^）连接，或按三位分组（524 288）"},
    "dash_range": {"en": "{text} has a dash between two numbers, which may mean a range; write one number (- or − for minus)",
                   "zh": "{text} 的两个数之间有破折号，可能表示范围；请只写一个数（减号请用 - 或 −）"},
    "incomplete": {"en": "{text} ends early: a number is missing after {op}", "zh": "{text} 不完整：{op} 之后缺少一个数"},
    "unbalanced": {"en": "unbalanced parentheses in {text}", "zh": "{text} 中的括号不配对"},
    "too_deep": {"en": "{text} nests parentheses too deeply", "zh": "{text} 的括号嵌套太深"},
    "implicit_product": {"en": "write an operator between a number and a parenthesis in {text}, e.g. 2*(3+1)",
                         "zh": "{text} 中数与括号之间请写运算符，例如 2*(3+1)"},
    "superscript_base": {"en": "a superscript needs a number before it, as in 2⁸ or 10⁻³ ({text})",
                         "zh": "上标前面需要一个底数，例如 2⁸ 或 10⁻³（{text}）"},
    "superscript_digits": {"en": "a superscript sign needs superscript digits after it, as in 2⁻⁹ ({text})",
                           "zh": "上标符号后面需要上标数字，例如 2⁻⁹（{text}）"},
    "infinity_alone": {"en": "infinity is read only on its own (inf, -inf, ∞), not inside arithmetic ({text})",
                       "zh": "无穷大只能单独写（inf、-inf、∞），不能参与运算（{text}）"},
    "division_by_zero": {"en": "{text} divides by zero", "zh": "{text} 除以了零"},
    "negative_root": {"en": "{text} raises a negative number to a fractional power", "zh": "{text} 对负数取了分数次幂"},
    "exponent_too_large": {"en": "the exponent in {text} is too large to evaluate", "zh": "{text} 中的指数太大，无法计算"},
    "too_large": {"en": "{text} is larger than any float64 (the largest is about 1.8e308)",
                  "zh": "{text} 超出了 float64 的范围（最大约为 1.8e308）"},
    "too_small": {"en": "{text} is closer to zero than any float64 but not zero (the smallest is about 4.9e-324)",
                  "zh": "{text} 比任何非零 float64 都更接近零，但又不是零（最小约为 4.9e-324）"},
    "unknown_unit": {"en": "unknown unit {unit}; {expected}", "zh": "无法识别的单位 {unit}；{expected}"},
    "unknown_unit_bare": {"en": "unknown unit {unit}", "zh": "无法识别的单位 {unit}"},
    "incompatible_unit": {"en": "{unit} cannot be converted: {expected}", "zh": "{unit} 无法换算：{expected}"},
    "expected_pure": {"en": "the answer is a pure number (write it without a unit)", "zh": "答案是一个纯数（请不带单位）"},
    "expected_unit": {"en": "the answer is asked in {unit}", "zh": "答案的单位应为 {unit}"},
    "not_a_response": {"en": "a {kind} answer is text or a number, not {type}", "zh": "{kind} 题的回答应为文本或数，而不是 {type}"},
    "converted": {"en": "({given} = {value})", "zh": "（{given} = {value}）"},
    "within_sig": {"en": "(accepted: correct to {n} significant figures, e.g. {example})",
                   "zh": "（精确到 {n} 位有效数字即可，例如 {example}）"},
    "within_dp": {"en": "(accepted: correct to {n} decimals, e.g. {example})",
                  "zh": "（精确到 {n} 位小数即可，例如 {example}）"},
    "question_id": {"en": "Question id: {id} (ask it again: fp8lab quiz --id {id})",
                    "zh": "题目编号：{id}（再做一次：fp8lab quiz --id {id}）"},
    "self_assess": {"en": "Compare your answer with the model answer and the points below.",
                    "zh": "请把你的回答与下面的参考答案和要点对照。"},
    "self_yes": {"en": "Self-assessed: covered.", "zh": "自评：已覆盖要点。"},
    "self_no": {"en": "Self-assessed: missed some points.", "zh": "自评：遗漏了部分要点。"},
    "model_answer": {"en": "Model answer", "zh": "参考答案"},
    "points": {"en": "A good answer covers", "zh": "好的回答应包括"},
    "weak_answer": {"en": "A common weak answer", "zh": "常见的薄弱回答"},
    "explanation": {"en": "Why", "zh": "解析"},
    "claim": {"en": "The claim", "zh": "流传的说法"},
    "claim_source": {"en": "seen in", "zh": "出处类型"},
    "correction": {"en": "Correct statement", "zh": "正确的说法"},
    "hint": {"en": "Hint", "zh": "提示"},
    "hint_line": {"en": "Hint {i}/{n}: {text}", "zh": "提示 {i}/{n}：{text}"},
    "colon": {"en": ": ", "zh": "："},
    "no_more_hints": {"en": "No more hints.", "zh": "没有更多提示了。"},
    "unit": {"en": "unit", "zh": "单位"},
    # terminal quiz
    "prompt_choice": {"en": "Your answer (letter; h = hint, s = skip, q = quit): ",
                      "zh": "你的答案（字母；h = 提示，s = 跳过，q = 退出）："},
    "prompt_multi": {"en": "Your answer (one or more letters; h = hint, s = skip, q = quit): ",
                     "zh": "你的答案（一个或多个字母；h = 提示，s = 跳过，q = 退出）："},
    "prompt_number": {"en": "Your answer ({unit}; h = hint, s = skip, q = quit): ",
                      "zh": "你的答案（{unit}；h = 提示，s = 跳过，q = 退出）："},
    "prompt_open": {"en": "Your answer (one line; h = hint, s = skip, q = quit): ",
                    "zh": "你的答案（一行；h = 提示，s = 跳过，q = 退出）："},
    "prompt_self": {"en": "Did your answer cover these points? (y/n): ", "zh": "你的回答覆盖了这些要点吗？(y/n)："},
    "yes_no": {"en": "Please type y or n.", "zh": "请输入 y 或 n。"},
    "pure_number": {"en": "a number", "zh": "一个数"},
    "skipped": {"en": "Skipped.", "zh": "已跳过。"},
    "quit": {"en": "Quiz stopped.", "zh": "测验已结束。"},
    "no_questions": {"en": "No questions match these filters.", "zh": "没有符合条件的题目。"},
    "score": {"en": "Score: {correct}/{answered} correct ({pct}), {skipped} skipped, {unseen} not reached.",
              "zh": "得分：{answered} 题中答对 {correct} 题（{pct}），跳过 {skipped} 题，未作答 {unseen} 题。"},
    "by_topic": {"en": "By topic", "zh": "按主题"},
    "topic": {"en": "topic", "zh": "主题"},
    "asked": {"en": "asked", "zh": "题数"},
    "answered": {"en": "answered", "zh": "作答"},
    "n_correct": {"en": "correct", "zh": "答对"},
    "n_skipped": {"en": "skipped", "zh": "跳过"},
    # widget
    "check": {"en": "Check", "zh": "检查"},
    "show_answer": {"en": "Show answer", "zh": "显示答案"},
    "covered": {"en": "I covered it", "zh": "我答到了"},
    "missed": {"en": "I missed points", "zh": "我漏了要点"},
    "next": {"en": "Next", "zh": "下一题"},
    "previous": {"en": "Previous", "zh": "上一题"},
    "question_n": {"en": "Question {i} of {n}", "zh": "第 {i} 题，共 {n} 题"},
    "widget_score": {"en": "{correct} of {n} correct, {answered} answered", "zh": "共 {n} 题，已答 {answered} 题，答对 {correct} 题"},
    "your_answer": {"en": "Your answer", "zh": "你的答案"},
    "no_widgets": {"en": "(ipywidgets is not available: the questions are listed below; the answers follow at the end.)",
                   "zh": "（ipywidgets 不可用：下面列出题目，答案附在最后。）"},
    "answers": {"en": "Answers", "zh": "答案"},
    "check_yourself": {"en": "Check yourself", "zh": "自测"},
    # --list
    "id": {"en": "id", "zh": "编号"},
    "kind": {"en": "kind", "zh": "题型"},
    "difficulty": {"en": "difficulty", "zh": "难度"},
    "prompt": {"en": "prompt", "zh": "题目"},
    "n_questions": {"en": "{n} questions", "zh": "共 {n} 题"},
    "one_question": {"en": "1 question", "zh": "共 1 题"},
    "wrote_cards": {"en": "wrote {n} cards to {path}", "zh": "已把 {n} 张卡片写入 {path}"},
}

#: What the quiz shows for a topic, a kind, a difficulty, a unit and a claim's kind of source, per language.
NAMES: dict[str, dict[str, dict[str, str]]] = {
    "topic": {
        "float_anatomy": {"en": "float_anatomy", "zh": "浮点数结构"},
        "fp16_bf16": {"en": "fp16_bf16", "zh": "FP16 与 BF16"},
        "fp8": {"en": "fp8", "zh": "FP8"},
        "microscaling": {"en": "microscaling", "zh": "微缩放（MX）"},
        "scaling": {"en": "scaling", "zh": "缩放"},
        "gemm": {"en": "gemm", "zh": "GEMM"},
        "training": {"en": "training", "zh": "训练"},
        "int8_fp4": {"en": "int8_fp4", "zh": "INT8 与 FP4"},
        "kv_memory": {"en": "kv_memory", "zh": "KV 缓存与显存"},
        "hardware": {"en": "hardware", "zh": "硬件"},
        "myths": {"en": "myths", "zh": "流传的说法"},
    },
    "kind": {
        "single": {"en": "single", "zh": "单选"},
        "multiple": {"en": "multiple", "zh": "多选"},
        "numeric": {"en": "numeric", "zh": "数值"},
        "open": {"en": "open", "zh": "问答"},
    },
    "difficulty": {
        "easy": {"en": "easy", "zh": "易"},
        "medium": {"en": "medium", "zh": "中"},
        "hard": {"en": "hard", "zh": "难"},
    },
    "unit": {
        "bytes": {"en": "bytes", "zh": "字节"},
        "FLOP/byte": {"en": "FLOP/byte", "zh": "FLOP/字节"},
        "bits": {"en": "bits", "zh": "位"},
        "decades": {"en": "decades", "zh": "个十进制数量级"},
        "digits": {"en": "digits", "zh": "位十进制数字"},
        "elements": {"en": "elements", "zh": "个元素"},
        "sequences": {"en": "sequences", "zh": "条序列"},
        "tokens": {"en": "tokens", "zh": "个 token"},
    },
    "source": {
        "Chinese AI-infra campus-recruiting interview notes": {"en": "Chinese AI-infra campus-recruiting interview notes",
                                                               "zh": "AI Infra 校招面经"},
        "Chinese AI-infra interview notes": {"en": "Chinese AI-infra interview notes", "zh": "AI Infra 面经"},
        "Chinese LLM interview-prep article": {"en": "Chinese LLM interview-prep article", "zh": "大模型面试备考文章"},
        "Chinese tech-forum explainer post": {"en": "Chinese tech-forum explainer post", "zh": "技术论坛科普帖"},
        "FP8 tutorial blog post": {"en": "FP8 tutorial blog post", "zh": "FP8 教程博客"},
        "FP8 tutorial blog post with a Python demo": {"en": "FP8 tutorial blog post with a Python demo",
                                                      "zh": "附 Python 演示的 FP8 教程博客"},
    },
}


def say(key: str, lang: str = "en", **values: object) -> str:
    """One phrase in ``lang``, with ``{placeholders}`` filled from ``values``.

    >>> say("score", "en", correct=2, answered=3, pct="67%", skipped=1, unseen=0)
    'Score: 2/3 correct (67%), 1 skipped, 0 not reached.'
    """
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    if key not in MESSAGES:
        raise KeyError(f"no message {key!r}")
    return MESSAGES[key][lang].format(**values)


def name(table: str, key: str, lang: str = "en") -> str:
    """The learner-facing name of a topic, kind, difficulty or unit in ``lang``; an unlisted key is shown as it is.

    >>> name("kind", "numeric", "zh"), name("unit", "GiB", "zh"), name("difficulty", "hard", "en")
    ('数值', 'GiB', 'hard')
    """
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    if table not in NAMES:
        raise KeyError(f"no name table {table!r}; the tables are {', '.join(NAMES)}")
    return NAMES[table].get(key, {}).get(lang, key)


def source_name(claim_source: str, lang: str = "en") -> str:
    """A myth's ``claim_source`` in ``lang``: each ``;``-separated kind of source named from :data:`NAMES`.

    >>> source_name("FP8 tutorial blog post; Chinese AI-infra interview notes", "zh")
    'FP8 教程博客；AI Infra 面经'
    """
    parts = [name("source", p.strip(), lang) for p in claim_source.split(";")]
    return ("；" if lang == "zh" else "; ").join(parts)


def header(topic: str, kind: str, difficulty: str, lang: str = "en") -> str:
    """A question's header line: topic · kind · difficulty, named in ``lang``.

    >>> header("fp8", "numeric", "easy", "zh")
    'FP8 · 数值 · 易'
    """
    return " · ".join([name("topic", topic, lang), name("kind", kind, lang), name("difficulty", difficulty, lang)])
