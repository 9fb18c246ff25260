"""The user-facing phrases of the quiz, the widget and the grader, in English and Simplified Chinese.

>>> say("correct", "zh")
'正确。'
>>> say("answer_is", "en", answer="448")
'The answer is 448.'
"""

from __future__ import annotations

from .bank import LANGS

__all__ = ["MESSAGES", "say"]

MESSAGES: dict[str, dict[str, str]] = {
    "correct": {"en": "Correct.", "zh": "正确。"},
    "wrong": {"en": "Not quite.", "zh": "不对。"},
    "answer_is": {"en": "The answer is {answer}.", "zh": "答案是 {answer}。"},
    "you_said": {"en": "You answered {response}.", "zh": "你的回答是 {response}。"},
    "unit_mismatch": {"en": "The answer is asked in {unit}, not {got}.", "zh": "答案的单位应为 {unit}，而不是 {got}。"},
    "within": {"en": "(accepted within {tol})", "zh": "（允许误差 {tol}）"},
    "unreadable": {"en": "Could not read that answer: {reason}", "zh": "无法识别这个回答：{reason}"},
    "expect_letter": {"en": "type one letter of {letters}", "zh": "请输入 {letters} 中的一个字母"},
    "expect_letters": {"en": "type one or more letters of {letters}, e.g. \"A C\"",
                       "zh": "请输入 {letters} 中的一个或多个字母，例如 \"A C\""},
    "expect_number": {"en": "type a number such as 12, 2^-9 or 1.5e-3{unit}", "zh": "请输入一个数，例如 12、2^-9 或 1.5e-3{unit}"},
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
