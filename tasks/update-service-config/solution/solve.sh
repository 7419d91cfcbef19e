#!/bin/bash
python3 -c 'import json; p = "/app/service/config.json"; c = json.load(open(p))
c["server"].update(port=9090, workers=4); c["database"]["pool_size"] = 12; del c["database"]["legacy_mode"]; c["features"]["audit_log"] = True
json.dump(c, open(p, "w"), indent=2)'
