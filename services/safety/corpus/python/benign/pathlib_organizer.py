"""Sorts files of the working directory into folders by extension."""
from pathlib import Path


def organize(root: Path = Path(".")) -> dict:
    moved: dict = {}
    for path in list(root.iterdir()):
        if path.is_file() and path.suffix:
            folder = root / path.suffix.lstrip(".").lower()
            folder.mkdir(exist_ok=True)
            path.replace(folder / path.name)
            moved[path.name] = folder.name
    return moved
