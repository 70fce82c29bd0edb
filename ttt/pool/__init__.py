"""The AI pool: the crowd-fair scheduler (the Thinker) and its worker processes."""
