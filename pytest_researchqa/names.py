"""Names shared by the light (start-up) and heavy modules: question types and metrics."""

QUESTION_TYPES: tuple[str, ...] = ("lookup", "comprehension", "multi_hop", "adversarial")
# Graded on answerable rows (every type but false-premise adversarial rows).
ANSWERABLE_METRICS: tuple[str, ...] = ("citation_precision", "section_coverage", "citation_accuracy")
# Graded on false-premise rows: the seed's refusal correctness, and whether the premise was flagged at all.
REFUSAL_METRICS: tuple[str, ...] = ("refusal_correctness", "premise_flagged")
METRICS: tuple[str, ...] = ANSWERABLE_METRICS + REFUSAL_METRICS
