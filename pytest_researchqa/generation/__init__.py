"""Benchmark rows from a team's own papers, every expected passage verified verbatim.

``python -m pytest_researchqa generate PAPERS_DIR --model MODEL --out rows.yaml``:
one structured call per paper writes lookup, comprehension, multi-hop and
false-premise questions with their evidence (``reply``); the citation matcher
checks every passage against the plugin's own extraction of the paper, a
passage that is not verbatim is re-asked once with the matcher's diagnosis,
and what still is not is dropped with its reason (``checking``); calls, cache,
output and report are the ``pipeline``'s. Nothing here is imported unless the
subcommand runs.
"""

from .pipeline import GenerateError, GenerateOptions, generate

__all__ = ["GenerateError", "GenerateOptions", "generate"]
