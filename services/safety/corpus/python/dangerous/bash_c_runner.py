"""Runs a build step given as a string through bash -c."""
import subprocess


def run_step(step: str, workdir: str) -> int:
    completed = subprocess.run(["bash", "-c", step], cwd=workdir)
    return completed.returncode
