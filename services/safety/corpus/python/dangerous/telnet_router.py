"""Reads the uptime of a router over telnet."""
import telnetlib


def router_uptime(host: str, user: str, secret: str) -> str:
    session = telnetlib.Telnet(host, 23, timeout=10)
    session.read_until(b"login: ")
    session.write(user.encode() + b"\n")
    session.read_until(b"Password: ")
    session.write(secret.encode() + b"\n")
    session.write(b"show uptime\n")
    return session.read_all().decode()
