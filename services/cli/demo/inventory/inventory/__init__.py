"""Stock levels of a small shop's items."""
from inventory.stock import Item, low_stock, restock, total_value

__all__ = ["Item", "low_stock", "restock", "total_value"]
