"""The live queue (`wqtool serve`) over engine.replay + engine.writer — not built yet."""
