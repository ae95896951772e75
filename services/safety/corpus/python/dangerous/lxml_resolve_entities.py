"""Parses uploaded invoices with lxml, resolving entities."""
from lxml import etree


def parse_invoice(data: bytes):
    parser = etree.XMLParser(resolve_entities=True, no_network=False)
    root = etree.fromstring(data, parser)
    return {child.tag: child.text for child in root}
