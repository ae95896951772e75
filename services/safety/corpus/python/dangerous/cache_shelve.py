"""Keeps downloaded pages in a shelve database."""
import shelve


def cached_page(url: str, fetch) -> str:
    with shelve.open("pages.db") as db:
        if url not in db:
            db[url] = fetch(url)
        return db[url]
