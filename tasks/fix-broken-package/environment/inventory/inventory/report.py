from models import Item  # noqa: F401  (type reference)


def render(items):
    lines = []
    for it in sorted(items, key=lambda i: i.sku):
        lines.append(f"{it.sku} {it.name} {it.qty} x {it.unit_price:.2f} = {it.value:.2f}")
    total = sum(it.value for it in items)
    units = sum(it.qty for it in items)
    lines.append(f"TOTAL {total:.2f} ({len(items)} items, {units // len(items)} units)")
    return "\n".join(lines)
