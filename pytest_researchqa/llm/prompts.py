"""Versioned prompt files: their text, and the hash that enters every cache key and result.

Each prompt lives beside the code that asks it (a family's ``prompts/`` folder, ``generation/prompts``);
its hash is of its text alone, so moving a file changes no cache key.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping


@dataclass(frozen=True)
class Prompt:
    name: str
    template: str

    @property
    def sha(self) -> str:
        return hashlib.sha256(self.template.encode()).hexdigest()[:16]

    def render(self, *, paper: str, question: str, source: str = "") -> str:
        return fill(self.template, {"paper": paper, "question": question, "source": source})


def fill(template: str, values: Mapping[str, str]) -> str:
    """Fill ``{name}`` placeholders in one pass: the one template filler of every prompt.

    Not str.format (papers are full of braces), nor a replace per name: nothing inserted, a paper
    that quotes ``{question}`` included, is ever read as a placeholder.
    """
    if not values:
        return template
    pattern = re.compile(r"\{(" + "|".join(map(re.escape, values)) + r")\}")
    return pattern.sub(lambda m: values[m.group(1)], template)


def missing_placeholders(template: str, reference: str) -> list[str]:
    """The ``{name}`` placeholders of ``reference`` that :func:`fill` would find nowhere in ``template``
    (a user's prompt file against the bundled one it replaces), sorted."""
    names = sorted(set(re.findall(r"\{(\w+)\}", reference)))
    return [name for name in names if fill(template, {name: ""}) == template]


@functools.lru_cache(maxsize=None)
def load_prompt(folder: Path, name: str) -> Prompt:
    """The prompt ``name`` of a folder (``<folder>/<name>.md``), read once per process."""
    return Prompt(name, (folder / f"{name}.md").read_text(encoding="utf-8"))
