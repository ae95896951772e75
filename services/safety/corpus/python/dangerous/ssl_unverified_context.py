"""Reads a page over HTTPS with an unverified SSL context."""
import ssl
import urllib.request


def read_page(url: str) -> str:
    context = ssl._create_unverified_context()
    with urllib.request.urlopen(url, context=context) as response:
        return response.read().decode()
