import json
from pathlib import Path

EXPECTED = {
    "service": "orders-api",
    "server": {"host": "0.0.0.0", "port": 9090, "workers": 4, "timeouts": {"read": 30, "write": 30}},
    "database": {"url": "postgresql://orders@db.internal:5432/orders", "pool_size": 12},
    "features": {"search": True, "recommendations": False, "audit_log": True},
    "log_level": "info",
}


def test_config_is_valid_json_with_the_ticket_applied():
    assert json.loads(Path("/app/service/config.json").read_text()) == EXPECTED
