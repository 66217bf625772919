"""The on-disk answer cache: every answer is stored the moment it arrives.

One JSON file per key, written through a temporary file and a rename, so
concurrent xdist workers never see half a file and a run killed with
``kill -9`` keeps every answer that had arrived.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Optional

from ..papers import atomic_write


def cache_key(**parts: Any) -> str:
    """A stable key over plain values (model, parameters, prompt hash, row, paper hash)."""
    blob = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


class AnswerCache:
    def __init__(self, root: Path) -> None:
        self.root = root / "answers"

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Optional[dict]:
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: str, entry: dict) -> None:
        atomic_write(self._path(key), json.dumps(entry, ensure_ascii=False).encode())
