"""Downloads a report from an internal server, ignoring certificate errors."""
import requests


def download(url: str, target: str) -> None:
    response = requests.get(url, verify=False, timeout=30)
    response.raise_for_status()
    with open(target, "wb") as handle:
        handle.write(response.content)
