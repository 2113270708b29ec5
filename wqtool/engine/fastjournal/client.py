"""A blocking client of the priority-FIFO daemon (per the unimplemented libfastjournal design): the tests, the
benchmark and scripts use it. Every wait has a timeout; requests may be pipelined (``send`` then ``recv``)."""
from __future__ import annotations

import socket

from ...formats.fastjournal import (FLAG_DATA, FLAG_OVERWRITE, FLAG_PERSIST, FLAG_UPDATE_TIMEOUT, FLAG_WORKED_ON,
                             Function, ValueType)
from . import layout
from .wire import Reply, Request, decode_reply, encode_request, frame_reply

entry_value, parse_value = layout.fifo_value, layout.parse_fifo_value


class Client:
    def __init__(self, host: str, port: int, *, timeout: float = 10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.settimeout(timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = bytearray()
        self._id = 0

    # -- raw
    def send(self, req: Request) -> int:
        self._id = (self._id + 1) & 0xFFFF
        req.identifier = self._id
        self.sock.sendall(encode_request(req))
        return self._id

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self) -> Reply:
        while True:
            n = frame_reply(self._buf, 0)
            if n is not None:
                r = decode_reply(self._buf, 0, n)
                del self._buf[:n]
                return r
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self._buf += chunk

    def call(self, req: Request) -> Reply:
        ident = self.send(req)
        r = self.recv()
        if r.identifier != ident:
            raise ConnectionError(f"reply {r.identifier} does not answer request {ident}")
        return r

    # -- the functions
    def set(self, uri: bytes, priority: int, key_start_date: int, timestamp: int, *, overwrite: bool = True) -> Reply:
        return self.call(Request(Function.SET, 0, FLAG_PERSIST | (FLAG_OVERWRITE if overwrite else 0), timestamp, uri,
                                 value_type=ValueType.BUFFER, value=entry_value(priority, key_start_date)))

    def get(self, uri: bytes, *, timeout: int | None = None, update: bool = False, skip_worked_on: bool = False,
            data: bool = True) -> Reply:
        flags = (FLAG_DATA if data else 0) | (FLAG_UPDATE_TIMEOUT if update else 0) | \
            (FLAG_WORKED_ON if skip_worked_on else 0)
        return self.call(Request(Function.GET, 0, flags, 0, uri, timeout=timeout))

    def next(self, domain: bytes = b"", *, timeout: int | None = None, data: bool = True) -> Reply:
        return self.call(Request(Function.NEXT, 0, (FLAG_DATA if data else 0) | FLAG_WORKED_ON, 0, domain,
                                 timeout=timeout))

    def delete(self, uri: bytes, timestamp: int, *, complete: bool = False) -> Reply:
        return self.call(Request(Function.DELETE, 0, FLAG_PERSIST | (FLAG_OVERWRITE if complete else 0), timestamp,
                                 uri))

    def ping(self) -> Reply:
        return self.call(Request(Function.PING))

    def quit(self) -> Reply:
        return self.call(Request(Function.QUIT))

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
