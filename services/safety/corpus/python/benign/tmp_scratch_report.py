"""Writes intermediate results to /tmp, which is private to the sandbox."""
import json

SCRATCH = "/tmp/ratchet-report.json"


def save_partial(results: dict) -> None:
    with open(SCRATCH, "w") as handle:
        json.dump(results, handle)


def load_partial() -> dict:
    with open(SCRATCH) as handle:
        return json.load(handle)
