"""Loads plugins by executing their source files."""
from pathlib import Path


def load_plugins(directory: str) -> dict:
    namespace: dict = {}
    for path in sorted(Path(directory).glob("*.py")):
        exec(path.read_text(), namespace)
    return namespace
