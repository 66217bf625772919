"""Names shared by the light (start-up) and heavy modules: question types and metrics."""

QUESTION_TYPES: tuple[str, ...] = ("lookup", "comprehension", "multi_hop", "adversarial")
METRICS: tuple[str, ...] = ("citation_precision", "section_coverage", "citation_accuracy", "refusal_correctness")
