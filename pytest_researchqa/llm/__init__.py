"""LLM systems under test through litellm: contract, prompts, cache and the pipelined runner.

Nothing here is imported unless a run names a model (``--researchqa-model``);
litellm itself loads only when the first call is about to be made.
"""
