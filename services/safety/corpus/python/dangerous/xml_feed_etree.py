"""Parses an RSS feed downloaded from the web with ElementTree."""
import urllib.request
import xml.etree.ElementTree as ET


def titles(feed_url: str) -> list:
    with urllib.request.urlopen(feed_url, timeout=10) as response:
        root = ET.fromstring(response.read())
    return [item.findtext("title") for item in root.iter("item")]
