"""Files the plugin ships: the sample dataset and judge prompts.

A built wheel carries them under ``pytest_researchqa/_bundled/``; a source
checkout (editable install) has them at the project's top level.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def bundled_path(*parts: str) -> Path:
    packaged = _PACKAGE.joinpath("_bundled", *parts)
    if packaged.exists():
        return packaged
    return _PACKAGE.parent.joinpath(*parts)


def sample_dataset() -> Path:
    return bundled_path("datasets", "sample", "sample.yaml")
