"""Installs a plugin bundle downloaded by the user into plugins/."""
import sys
import tarfile
from pathlib import Path


def install(bundle: str, target: str = "plugins") -> list[str]:
    Path(target).mkdir(exist_ok=True)
    with tarfile.open(bundle) as archive:
        names = archive.getnames()
        archive.extractall(target)
    return names


if __name__ == "__main__":
    for name in install(sys.argv[1]):
        print("installed", name)
