"""Reads the service's settings from environment variables."""
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    database_url: str
    password: str
    port: int
    debug: bool


def from_environment() -> Settings:
    return Settings(
        database_url=os.environ.get("DATABASE_URL", "sqlite:///app.db"),
        password=os.environ["APP_PASSWORD"],
        port=int(os.getenv("PORT", "8000")),
        debug=os.getenv("DEBUG") == "1",
    )
