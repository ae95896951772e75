"""Loads the app config from YAML with the safe loader."""
import yaml


def load_config(path: str) -> dict:
    with open(path) as handle:
        return yaml.safe_load(handle) or {}
