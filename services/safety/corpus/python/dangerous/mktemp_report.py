"""Writes a report to a temporary file name from mktemp."""
import tempfile


def write_report(text: str) -> str:
    name = tempfile.mktemp(suffix=".txt")
    with open(name, "w") as handle:
        handle.write(text)
    return name
