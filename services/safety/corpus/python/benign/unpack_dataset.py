"""Unpacks a dataset archive into data/, refusing members that would land outside it."""
import sys
import tarfile
from pathlib import Path


def unpack(archive_path: str, target: str = "data") -> int:
    root = Path(target).resolve()
    root.mkdir(exist_ok=True)
    with tarfile.open(archive_path) as archive:
        safe = [member for member in archive.getmembers() if member.isfile() and (root / member.name).resolve().is_relative_to(root)]
        archive.extractall(root, members=safe)
    return len(safe)


if __name__ == "__main__":
    print(unpack(sys.argv[1]), "files unpacked")
