#!/usr/bin/env python3
"""Extract action items from a meeting transcript (speaker-prefixed lines)."""
import argparse
import json
import re
import sys

SPEAKER = re.compile(r"^(?P<who>[A-Z][\w .'-]{0,40}):\s*(?P<text>.*)$")
DUE = re.compile(r"\bby (?P<due>(?:mon|tues|wednes|thurs|fri|satur|sun)day|tomorrow|eod)\b", re.I)


def actions(lines):
    out = []
    for line in lines:
        m = SPEAKER.match(line.strip())
        if not m:
            continue
        who, text = m["who"], m["text"]
        due = DUE.search(text)
        if text.upper().startswith("ACTION:"):
            body = text[7:].strip()
            owner, _, task = body.partition(" to ")
            out.append({"owner": owner.strip(), "task": task.strip() or body, "due": None})
        elif text.lower().startswith("i'll "):
            out.append({"owner": who, "task": text[5:].rstrip("."), "due": due and due["due"]})
        elif text.lower().startswith("can you ") and "," in text:
            owner = text.rsplit(",", 1)[1].strip(" ?.")
            task = text[8:].split(",")[0]
            task = DUE.sub("", task).strip()
            out.append({"owner": owner, "task": task, "due": due and due["due"]})
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("transcript")
    p.add_argument("--format", choices=("json", "text"), default="text")
    args = p.parse_args(argv)
    with open(args.transcript, encoding="utf-8") as fh:
        items = actions(fh)
    if args.format == "json":
        json.dump(items, sys.stdout, indent=2)
        print()
    else:
        for it in items:
            print(f"- {it['owner']}: {it['task']}" + (f" (due {it['due']})" if it["due"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
