"""Prepares a shared upload directory."""
import os


def prepare_uploads(path: str) -> None:
    os.makedirs(path, exist_ok=True)
    os.chmod(path, 0o777)
