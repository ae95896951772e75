"""Computes file sizes of a directory tree with a thread pool."""
import os
from concurrent.futures import ThreadPoolExecutor


def sizes(root: str) -> dict:
    paths = [os.path.join(folder, name) for folder, _, names in os.walk(root) for name in names]
    with ThreadPoolExecutor(max_workers=8) as pool:
        return dict(zip(paths, pool.map(os.path.getsize, paths)))
