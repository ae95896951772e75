"""Caches computed tables on disk with marshal."""
import marshal
from pathlib import Path


def load_table(path: Path):
    with path.open("rb") as handle:
        return marshal.load(handle)
