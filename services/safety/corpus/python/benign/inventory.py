"""An inventory of items with quantities."""
from dataclasses import dataclass, field


@dataclass
class Inventory:
    items: dict = field(default_factory=dict)

    def add(self, name: str, quantity: int = 1) -> None:
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self.items[name] = self.items.get(name, 0) + quantity

    def remove(self, name: str, quantity: int = 1) -> None:
        if self.items.get(name, 0) < quantity:
            raise KeyError(name)
        self.items[name] -= quantity
        if self.items[name] == 0:
            del self.items[name]
