"""Archives a directory named on the command line with os.system."""
import os
import sys
from datetime import date


def backup(directory: str) -> str:
    archive = f"{directory}-{date.today()}.tar.gz"
    os.system("tar czf " + archive + " " + directory)
    return archive


if __name__ == "__main__":
    print(backup(sys.argv[1]))
