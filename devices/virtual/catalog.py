"""The virtual phone's catalogue: ``python -m devices.virtual.catalog --summary`` (or ``--json``).

Prints ``domains=N``, ``tools=N``, ``templates=N``, ``skills=N``, ``apps=N``, then counts per
category, per tag and per domain, so a person can see the benchmark's breadth at a glance.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from typing import Any

from devices.virtual.registry import catalog


def summary() -> dict[str, Any]:
    cat = catalog()
    templates = list(cat.templates.values())
    return {
        "domains": len(cat.domains),
        "tools": len(cat.tools),
        "templates": len(templates),
        "skills": len(cat.skills),
        "apps": len(cat.apps),
        "category": dict(sorted(Counter(t.category for t in templates).items())),
        "tag": dict(sorted(Counter(tag for t in templates for tag in t.tags).items())),
        "domain_tools": {name: len(d.tools) for name, d in sorted(cat.domains.items())},
        "domain_templates": {name: len(d.templates) for name, d in sorted(cat.domains.items())},
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--summary", action="store_true", help="print key=value counts (default)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--tools", action="store_true", help="list every tool with its domain")
    args = ap.parse_args(argv)
    s = summary()
    if args.json:
        print(json.dumps(s, indent=2))
        return
    if args.tools:
        for t in catalog().tools.values():
            print(f"{t.spec.domain:18} {t.spec.name:34} {t.spec.description}")
        return
    for key in ("domains", "tools", "templates", "skills", "apps"):
        print(f"{key}={s[key]}")
    for group in ("category", "tag"):
        for name, n in s[group].items():
            print(f"{group}.{name}={n}")
    for name, n in s["domain_tools"].items():
        print(f"domain.{name}=tools:{n} templates:{s['domain_templates'][name]}")


if __name__ == "__main__":
    main()
