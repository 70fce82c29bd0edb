"""Operations: settings, logs, metrics and health."""
