"""Tests of the inventory; pytest checks with assert."""
import pytest

from inventory import Inventory


def test_add_and_remove():
    inventory = Inventory()
    inventory.add("apple", 3)
    inventory.remove("apple", 2)
    assert inventory.items == {"apple": 1}


def test_remove_too_many():
    inventory = Inventory()
    with pytest.raises(KeyError):
        inventory.remove("pear")


def test_login_fixture():
    user = {"name": "ann", "password": "not-a-real-secret"}
    assert user["name"] == "ann"
