"""Versioned prompt files: their text, and the hash that enters every cache key and result."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

PROMPTS = Path(__file__).resolve().parent.parent / "prompts"


@dataclass(frozen=True)
class Prompt:
    name: str
    template: str

    @property
    def sha(self) -> str:
        return hashlib.sha256(self.template.encode()).hexdigest()[:16]

    def render(self, *, paper: str, question: str, source: str = "") -> str:
        # str.replace, not str.format: papers are full of braces.
        return (
            self.template.replace("{paper}", paper).replace("{question}", question).replace("{source}", source)
        )


@functools.lru_cache(maxsize=None)
def load_prompt(name: str) -> Prompt:
    return Prompt(name, (PROMPTS / f"{name}.md").read_text(encoding="utf-8"))
