"""Group a list of changes into Markdown release notes."""

import argparse

SECTIONS = (("feat:", "Features"), ("fix:", "Fixes"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("changes")
    ap.add_argument("--version", required=True)
    args = ap.parse_args()
    groups: dict[str, list[str]] = {"Features": [], "Fixes": [], "Other": []}
    for line in open(args.changes):
        line = line.strip()
        if not line:
            continue
        for prefix, title in SECTIONS:
            if line.startswith(prefix):
                groups[title].append(line[len(prefix):].strip())
                break
        else:
            groups["Other"].append(line)
    print(f"## {args.version}\n")
    for title, items in groups.items():
        if items:
            print(f"### {title}\n")
            print("\n".join(f"- {i}" for i in items) + "\n")


if __name__ == "__main__":
    main()
