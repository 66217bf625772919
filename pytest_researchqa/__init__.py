"""pytest-researchqa: citation-grounded paper-QA benchmark rows as pytest tests.

The public names (``__all__``) load on first use (``exports``; their types are in ``__init__.pyi``): pytest
imports the package at every start-up once the plugin is installed and, without byte-code caches, parses
and compiles it each time, so it holds next to nothing (docs/performance.md).

PYTEST_DONT_REWRITE: it holds no test's asserts (docs/architecture.md).
"""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    from .exports import export

    return export(name)
