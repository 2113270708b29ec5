"""Output: rich tables, JSON Lines, hex. Input = engine results; nothing here reads logs."""
