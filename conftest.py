"""Project-wide test configuration.

pytest-researchqa is registered through its entry point, so it is not listed
in pytest_plugins here (registering it twice is an error); pytester is.
"""

import os

# litellm must never fetch its price map from the network during tests.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

pytest_plugins = ["pytester"]
