"""Lists MD5 checksums of files, to spot duplicates (not for security)."""
import hashlib
import sys
from pathlib import Path


def checksum(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(checksum(Path(name)), name)
