"""Reads an XML sitemap with defusedxml."""
from defusedxml import ElementTree


def urls(path: str) -> list:
    root = ElementTree.parse(path).getroot()
    return [element.text for element in root.iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")]
