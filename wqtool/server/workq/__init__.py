"""``wqtool serve``: a drop-in workq 0.2.0 server (wire protocol, command log, limits) on wqtool's engine."""
from .server import ServeOptions, Server, StartRefused, serve

__all__ = ["ServeOptions", "Server", "StartRefused", "serve"]
