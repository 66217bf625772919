"""The glossary family's default system: a dictionary that knows two terms."""

from pytest_researchqa import Answer

DEFINITIONS = {"entropy": "the expected surprise of a random variable, in bits",
               "overfitting": "a model that memorizes its training data and fails on new data"}


def dictionary(question: str, paper: None, row=None) -> Answer:
    return Answer(DEFINITIONS.get(row.term, "no idea"))
