#!/usr/bin/env python3
# /// script
# requires-python = ">=3.10"
# dependencies = []
# ///
"""Summary statistics of a FASTA file."""

import argparse
import sys


def read_fasta(path):
    name, seq = None, []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line.startswith(">"):
                if name is not None:
                    yield name, "".join(seq)
                name, seq = line[1:].split()[0], []
            elif line:
                seq.append(line.upper())
    if name is not None:
        yield name, "".join(seq)


def n50(lengths):
    half, total = sum(lengths) / 2, 0
    for length in sorted(lengths, reverse=True):
        total += length
        if total >= half:
            return length
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("fasta")
    args = parser.parse_args()
    seqs = list(read_fasta(args.fasta))
    if not seqs:
        sys.exit(f"error: no sequences in {args.fasta}")
    lengths = [len(s) for _, s in seqs]
    bases = "".join(s for _, s in seqs)
    known = [b for b in bases if b in "ACGT"]
    gc = sum(b in "GC" for b in known) / len(known) if known else 0.0
    print(f"sequences   {len(seqs)}")
    print(f"total       {sum(lengths)}")
    print(f"mean        {sum(lengths) / len(lengths):.1f}")
    print(f"N50         {n50(lengths)}")
    print(f"GC          {gc:.1%}")
    print(f"ambiguous   {bases.count('N') / len(bases):.2%}")


if __name__ == "__main__":
    main()
