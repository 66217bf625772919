"""From records to what a reader sees: summaries, guards, gates (pure) and renderers."""
