"""The glossary family's default test: the answer uses every keyword of its row (and, with a judge, the
judges' verdicts are recorded)."""


def test_definition(researchqa_row, researchqa_answer, researchqa_recorder, researchqa_judge):
    used = [k for k in researchqa_row.keywords if k in researchqa_answer.text.lower()]
    researchqa_recorder.metric("keyword_recall", len(used) / len(researchqa_row.keywords))
    if researchqa_judge:
        from pytest_researchqa.llm.judges import judge_all  # only a run with judges loads them

        researchqa_recorder.judge(judge_all(researchqa_judge, researchqa_row, researchqa_answer))
    assert len(used) == len(researchqa_row.keywords), f"missing keywords: {set(researchqa_row.keywords) - set(used)}"
