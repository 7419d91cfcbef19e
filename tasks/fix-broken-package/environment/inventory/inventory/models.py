import json
from dataclasses import dataclass


@dataclass
class Item:
    sku: str
    name: str
    qty: int
    unit_price: float

    @property
    def value(self):
        return self.qty * self.price


def load_items(path):
    with open(path) as f:
        return [Item(d["sku"], d["name"], d["quantity"], d["unit_price"]) for d in json.load(f)]
