import re
import subprocess
from pathlib import Path

SHOP = Path("/app/shop")


def test_old_name_gone_from_code():
    for py in SHOP.rglob("*.py"):
        assert not re.search(r"\bcalc_total\b", py.read_text()), str(py)


def test_look_alikes_and_changelog_kept():
    pricing = (SHOP / "shop/pricing.py").read_text()
    assert "def compute_total(items, tax=0.2):" in pricing
    assert "def calc_totals_legacy(orders):" in pricing
    assert "def recalc_total_cache(key, items):" in pricing
    assert (SHOP / "CHANGELOG.md").read_text().count("`calc_total`") == 2


def test_program_runs():
    out = subprocess.run(["python3", "main.py"], cwd=SHOP, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["cart 30.6", "no tax 20.0", "legacy [3.0, 5.0]",
                                       "cached 120.0"]
    check = subprocess.run(["python3", "-c", "import shop; shop.compute_total; "
                            "assert not hasattr(shop, 'calc_total')"], cwd=SHOP,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
