"""The glossary family's systems: a dictionary that knows two terms, as a user's function (its default system)
and as a system the family names by a word (``glossary-echo``: called with the row and no paper)."""

from pytest_researchqa import Answer

DEFINITIONS = {"entropy": "the expected surprise of a random variable, in bits",
               "overfitting": "a model that memorizes its training data and fails on new data"}


def dictionary(question: str, paper: None, row=None) -> Answer:
    return Answer(DEFINITIONS.get(row.term, "no idea"))


def echo(row, paper) -> Answer:
    return Answer(f"{row.term}: {DEFINITIONS.get(row.term, 'no idea')}")


async def async_step(records, services, settings, say):  # an end-of-run step written async by mistake
    return {}


def failing_check(rows, settings):  # a before_rows that raises
    raise ValueError("no rows today")


def _plain_def(function):  # a decorator whose wrapper is a plain def, hiding that the function is async
    import functools

    @functools.wraps(function)
    def wrapper(*args):
        return function(*args)
    return wrapper


@_plain_def
async def wrapped_async_check(rows, settings):
    return None
