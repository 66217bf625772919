"""Project-wide test configuration.

pytest-researchqa is registered through its entry point, so it is not listed
in pytest_plugins here (registering it twice is an error); pytester is.
"""

import os

# litellm must never fetch its price map from the network during tests.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# pytester's in-process runs restore sys.modules afterwards, and numpy (under
# rank_bm25) refuses to be imported twice in one process: load it once here.
import rank_bm25  # noqa: E402,F401

pytest_plugins = ["pytester"]
