"""Loaded by every Python process the air-gap test starts (on PYTHONPATH): outbound network refused.

A connection or name lookup beyond loopback raises, and is written to ``$TRIDENT_NET_LOG`` (one line
each), so the test can assert that nothing tried: no model hub, no telemetry, no font or script host.
"""

from __future__ import annotations

import ipaddress
import os
import socket

_LOG = os.environ.get("TRIDENT_NET_LOG", "")
_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", ""}


def _loopback(host: object) -> bool:
    if not isinstance(host, str):
        return False
    if host.lower() in _LOCAL_NAMES:
        return True
    try:
        ip = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or ip.is_unspecified or bool(mapped and mapped.is_loopback)


def _refuse(what: str) -> None:
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()} {what}\n")
    raise OSError(101, f"network is unreachable (air-gap test): {what}")


def _check(sock: socket.socket, address: object) -> None:
    inet = sock.family in (socket.AF_INET, socket.AF_INET6)
    if inet and isinstance(address, tuple) and not _loopback(address[0]):
        _refuse(f"connect {address!r}")


_connect, _connect_ex, _sendto = socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto
_getaddrinfo = socket.getaddrinfo


def connect(self: socket.socket, address: object) -> None:
    _check(self, address)
    return _connect(self, address)


def connect_ex(self: socket.socket, address: object) -> int:
    _check(self, address)
    return _connect_ex(self, address)


def sendto(self: socket.socket, data: bytes, *args: object) -> int:
    _check(self, args[-1])
    return _sendto(self, data, *args)


def getaddrinfo(host: object, *args: object, **kw: object):
    if isinstance(host, bytes):
        host = host.decode()
    if host is not None and not _loopback(host):
        _refuse(f"resolve {host!r}")
    return _getaddrinfo(host, *args, **kw)


socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto = connect, connect_ex, sendto
socket.getaddrinfo = getaddrinfo
