"""Talks to a TLS service with the default, verifying context."""
import socket
import ssl


def fetch_banner(host: str, port: int = 443) -> bytes:
    context = ssl.create_default_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    with socket.create_connection((host, port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=host) as tls:
            return tls.recv(1024)
