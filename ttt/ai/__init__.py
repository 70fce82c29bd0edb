"""The AI: the perfect solver and the classic levels, analysis, Ultimate's search (MCTS) and the
AI's random source. Imports the rules only."""
