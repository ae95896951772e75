"""Prints the last commit of the repository, running git without a shell."""
import subprocess


def last_commit(repo: str = ".") -> str:
    result = subprocess.run(["git", "log", "-1", "--format=%H %s"], cwd=repo, capture_output=True, text=True, check=True)
    return result.stdout.strip()


if __name__ == "__main__":
    print(last_commit())
