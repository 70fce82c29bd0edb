"""The ground floor, the standard library only: the code's fingerprint, log lines, the JSON log and
the marker of words to translate."""
