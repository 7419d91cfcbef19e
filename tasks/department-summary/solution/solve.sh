#!/bin/bash
python3 -c 'import csv, json
rows = list(csv.DictReader(open("/app/employees.csv")))
group = lambda d: [r for r in rows if r["department"] == d]
json.dump({d: {"headcount": len(group(d)), "avg_salary": round(sum(int(r["salary"]) for r in group(d)) / len(group(d)), 2), "newest": max(group(d), key=lambda r: r["start_date"])["name"]} for d in {r["department"] for r in rows}}, open("/app/departments.json", "w"), indent=2)'
