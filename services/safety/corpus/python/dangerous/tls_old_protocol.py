"""Talks to a legacy device that only speaks TLS 1.0."""
import socket
import ssl


def legacy_socket(host: str, port: int):
    raw = socket.create_connection((host, port))
    return ssl.wrap_socket(raw, ssl_version=ssl.PROTOCOL_TLSv1)
