import json
import subprocess


def report(tmp_path, items):
    stock = tmp_path / "other.json"
    stock.write_text(json.dumps(items))
    return subprocess.run(["python3", "-m", "inventory", str(stock)], cwd="/app/inventory",
                          capture_output=True, text=True)


def test_example_stock():
    out = subprocess.run(["python3", "-m", "inventory", "stock.json"], cwd="/app/inventory",
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "A-100 anchor 3 x 12.50 = 37.50",
        "B-200 bolt 120 x 0.15 = 18.00",
        "W-310 washer 250 x 0.04 = 10.00",
        "TOTAL 65.50 (3 items, 373 units)",
    ]


def test_other_stock(tmp_path):
    out = report(tmp_path, [
        {"sku": "Z-1", "name": "zip", "qty": 7, "unit_price": 2.25},
        {"sku": "C-9", "name": "cable", "qty": 2, "unit_price": 19.99},
    ])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "C-9 cable 2 x 19.99 = 39.98",
        "Z-1 zip 7 x 2.25 = 15.75",
        "TOTAL 55.73 (2 items, 9 units)",
    ]
