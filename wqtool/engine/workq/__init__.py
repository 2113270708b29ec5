"""workq 0.2.0 command logs: discovery, reading, replay, verify, pack (spec: docs/formats/workq-cmdlog.md)."""
