"""Loads settings from settings.json with defaults."""
import json
from pathlib import Path

DEFAULTS = {"theme": "light", "page_size": 20}


def load(path: Path = Path("settings.json")) -> dict:
    if not path.exists():
        return dict(DEFAULTS)
    return {**DEFAULTS, **json.loads(path.read_text())}


def save(settings: dict, path: Path = Path("settings.json")) -> None:
    path.write_text(json.dumps(settings, indent=2))
