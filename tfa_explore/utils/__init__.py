"""Small shared pieces: atomic file writes, summaries."""
