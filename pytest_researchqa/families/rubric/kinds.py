"""Rubric items sorted by rules into six kinds: citation, limitation, comparison, example, impact, other. Pure.

The kinds are the seed's error-analysis types. The rules look for the words
that name each kind (word starts, so "limitations" and "limiting" both count)
and take the first kind that matches, in the order above: an item that asks
for a study to be cited is a citation item whatever else it mentions.
"""

from __future__ import annotations

import re

ITEM_KINDS: tuple[str, ...] = ("citation", "limitation", "comparison", "example", "impact", "other")

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("citation", re.compile(
        r"\bcit(?:e|es|ed|ing|ation)\b|\(title:|\bet al\b|\breference[sd]? (?:the|a|to)\b.*\b(?:paper|study|work)"
        r"|\bpaper by\b|\bstudy by\b|\bwork (?:of|by) [A-Z]", re.IGNORECASE)),
    ("limitation", re.compile(
        r"\blimitation|\blimits? of\b|\bdrawback|\bshortcoming|\bweakness|\bdisadvantage|\bpitfall|\bcaveat"
        r"|\bconstraints? (?:of|on)\b|\bfail(?:s|ure)? to\b|\bbias(?:es)? (?:of|in)\b", re.IGNORECASE)),
    ("comparison", re.compile(
        r"\bcompar|\bcontrast|\bversus\b|\bvs\.?(?=\s)|\bdiffer(?:s|ed|ence|ences|ent from)?\b|\brelative to\b"
        r"|\boutperform|\bsimilarit|\btrade-?offs?\b|\bbefore and after\b", re.IGNORECASE)),
    ("example", re.compile(
        r"\bexamples?\b|\be\.g\.|\bfor instance\b|\binstances? of\b|\bsuch as\b|\bcase stud|\bspecific "
        r"(?:studies|cases|methods|techniques|species|instances)\b", re.IGNORECASE)),
    ("impact", re.compile(
        r"\bimpact|\beffects?\b|\baffect|\binfluenc|\bcaus(?:e|es|ed|ing|al)\b|\bconsequen|\bbenefit"
        r"|\blead(?:s|ing)? to\b|\bresult(?:s|ing)? in\b|\bcontribut|\bimplication|\boutcomes?\b", re.IGNORECASE)),
)


def classify_item(text: str) -> str:
    """The first kind whose rule matches the item's text; ``other`` when none does."""
    for kind, rule in _RULES:
        if rule.search(text):
            return kind
    return "other"
