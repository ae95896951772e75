"""Configures logging to the console and a rotating file."""
import logging
import logging.handlers


def setup(level: str = "INFO") -> logging.Logger:
    logger = logging.getLogger("app")
    logger.setLevel(level)
    handler = logging.handlers.RotatingFileHandler("app.log", maxBytes=1_000_000, backupCount=3)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.addHandler(logging.StreamHandler())
    return logger
