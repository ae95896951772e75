"""Connects to a TLS service without checking its certificate or name."""
import socket
import ssl


def fetch_banner(host: str, port: int) -> bytes:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection((host, port)) as raw:
        with context.wrap_socket(raw, server_hostname=host) as tls:
            return tls.recv(1024)
