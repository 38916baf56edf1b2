#!/usr/bin/env python3
# /// script
# requires-python = ">=3.10"
# dependencies = []
# ///
"""Keep the sequences of a FASTA file within a length range."""

import argparse

from fasta_stats import read_fasta


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("fasta")
    parser.add_argument("--min", type=int, default=0)
    parser.add_argument("--max", type=int)
    parser.add_argument("-o", "--output", default="filtered.fasta")
    args = parser.parse_args()
    kept = 0
    with open(args.output, "w", encoding="utf-8") as out:
        for name, seq in read_fasta(args.fasta):
            if len(seq) >= args.min and (args.max is None or len(seq) <= args.max):
                out.write(f">{name}\n{seq}\n")
                kept += 1
    print(f"{args.output}: {kept} sequences")


if __name__ == "__main__":
    main()
