"""Fetches JSON from an API with a timeout and certificate checks on."""
import requests


def fetch_user(base_url: str, user_id: int) -> dict:
    response = requests.get(f"{base_url}/users/{user_id}", timeout=10)
    response.raise_for_status()
    return response.json()
