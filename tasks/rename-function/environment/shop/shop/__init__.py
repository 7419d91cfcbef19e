from .pricing import calc_total, calc_totals_legacy

__all__ = ["calc_total", "calc_totals_legacy"]
