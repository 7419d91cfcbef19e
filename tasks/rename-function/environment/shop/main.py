from shop import calc_totals_legacy
from shop.cart import Cart
from shop.pricing import calc_total, recalc_total_cache

cart = Cart()
cart.add(10.0, 2)
cart.add(5.5)
print("cart", cart.total())
print("no tax", calc_total([(10.0, 2)], tax=0))
print("legacy", calc_totals_legacy([[(1.0, 3)], [(2.5, 2)]]))
print("cached", recalc_total_cache("a", [(100.0, 1)]))
