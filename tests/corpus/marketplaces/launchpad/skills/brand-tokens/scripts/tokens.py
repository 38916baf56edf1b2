#!/usr/bin/env python3
"""Design tokens from the brand file, as CSS custom properties or a JSON theme."""

import argparse
import json
import sys


def flatten(brand, prefix):
    for group, values in brand.items():
        for name, value in values.items():
            yield f"{prefix}-{group[:-1] if group.endswith('s') else group}-{name}", value


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("brand", help="the brand JSON file")
    parser.add_argument("--format", choices=["css", "json"], default="css")
    parser.add_argument("--prefix", default="brand")
    args = parser.parse_args()
    try:
        with open(args.brand, encoding="utf-8") as fh:
            brand = json.load(fh)
    except (OSError, ValueError) as exc:
        sys.exit(f"error: {exc}")
    tokens = dict(flatten(brand, args.prefix))
    if args.format == "css":
        print(":root {")
        for name, value in tokens.items():
            print(f"  --{name}: {value};")
        print("}")
    else:
        print(json.dumps(tokens, indent=2))


if __name__ == "__main__":
    main()
