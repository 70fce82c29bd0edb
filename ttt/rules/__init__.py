"""The rules of the two boards, classic and Ultimate: pure and immutable."""
