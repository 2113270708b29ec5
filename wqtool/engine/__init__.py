"""All I/O, offsets, loops and state. Returns dataclasses; never prints."""
