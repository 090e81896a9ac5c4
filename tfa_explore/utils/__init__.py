"""Small shared pieces: atomic file writes, summaries, the Adam factory."""
