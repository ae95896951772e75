"""Items in stock, what they are worth, and which ones to reorder."""
from dataclasses import dataclass


@dataclass
class Item:
    sku: str
    name: str
    quantity: int
    unit_price: float


def total_value(items):
    """The value of everything in stock, rounded to cents."""
    return round(sum(item.quantity * item.unit_price for item in items), 2)


def restock(item, amount):
    """Adds `amount` units to `item` and returns its new quantity."""
    if amount <= 0:
        raise ValueError(f"restock amount must be positive, got {amount}")
    item.quantity += amount
    return item.quantity


def low_stock(items, threshold):
    """The SKUs of the items with `threshold` units or fewer, in their order."""
    return [item.sku for item in items if item.quantity < threshold]
