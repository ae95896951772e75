import pytest

from inventory import Item, low_stock, restock, total_value


def shelf():
    return [
        Item("A-100", "notebook", 12, 2.50),
        Item("B-200", "pencil", 5, 0.40),
        Item("C-300", "stapler", 0, 7.90),
    ]


def test_total_value_sums_quantity_times_price():
    assert total_value(shelf()) == 32.0


def test_restock_adds_units():
    assert restock(Item("B-200", "pencil", 5, 0.40), 20) == 25


def test_restock_rejects_a_non_positive_amount():
    with pytest.raises(ValueError):
        restock(Item("B-200", "pencil", 5, 0.40), 0)


def test_low_stock_includes_the_threshold():
    assert low_stock(shelf(), threshold=5) == ["B-200", "C-300"]
