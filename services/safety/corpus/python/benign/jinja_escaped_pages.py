"""Renders pages with Jinja2 and autoescaping on."""
from jinja2 import Environment, FileSystemLoader, select_autoescape

env = Environment(loader=FileSystemLoader("templates"), autoescape=select_autoescape(["html", "xml"]))


def render(name: str, **context) -> str:
    return env.get_template(name).render(**context)
