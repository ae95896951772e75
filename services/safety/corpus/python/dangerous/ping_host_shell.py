"""Checks whether hosts answer a ping; the host name goes into a shell command."""
import subprocess
import sys


def is_up(host: str) -> bool:
    result = subprocess.run(f"ping -c 1 -W 1 {host}", shell=True, capture_output=True)
    return result.returncode == 0


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(name, "up" if is_up(name) else "down")
