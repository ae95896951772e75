"""Renames files in a directory to lowercase; a dry run by default."""
import argparse
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--apply", action="store_true")
    args = parser.parse_args()
    for path in sorted(args.directory.iterdir()):
        target = path.with_name(path.name.lower())
        if target != path:
            print(f"{path.name} -> {target.name}")
            if args.apply:
                path.rename(target)


if __name__ == "__main__":
    main()
