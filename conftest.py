"""Project-wide test configuration.

pytest-researchqa is registered through its entry point, so it is not listed
in pytest_plugins here (registering it twice is an error); pytester is.
"""

import os

# litellm must never fetch its price map from the network during tests.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# pytester's in-process runs restore sys.modules afterwards, and numpy (under
# rank_bm25) refuses to be imported twice in one process: load it once here.
import pytest  # noqa: E402
import rank_bm25  # noqa: E402,F401

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def litellm_loaded():
    """Import litellm once per test module that uses models: pytester's in-process runs would
    otherwise re-import it (seconds each). Modules ask for it with ``pytestmark``."""
    import litellm  # noqa: F401


@pytest.fixture
def server():
    """The scripted OpenAI-compatible server on 127.0.0.1 (tests/llm_server.py), for one test."""
    from llm_server import ScriptedLLM

    with ScriptedLLM() as scripted:
        yield scripted
