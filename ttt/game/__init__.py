"""A game as played: the variants (each board with its AI), the match model, how games end and
the wire view of a match. Pure."""
