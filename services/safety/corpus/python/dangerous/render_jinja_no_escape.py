"""Renders user profiles to HTML with Jinja2."""
from jinja2 import Environment, FileSystemLoader

env = Environment(loader=FileSystemLoader("templates"), autoescape=False)


def render_profile(user: dict) -> str:
    return env.get_template("profile.html").render(user=user)
