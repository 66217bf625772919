"""The glossary family's default test: the answer uses every keyword of its row."""


def test_definition(researchqa_row, researchqa_answer, researchqa_recorder):
    used = [k for k in researchqa_row.keywords if k in researchqa_answer.text.lower()]
    researchqa_recorder.metric("keyword_recall", len(used) / len(researchqa_row.keywords))
    assert len(used) == len(researchqa_row.keywords), f"missing keywords: {set(researchqa_row.keywords) - set(used)}"
