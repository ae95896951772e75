"""Loads the deployment config from YAML."""
import yaml


def load_config(path: str) -> dict:
    with open(path) as handle:
        return yaml.load(handle)
