#!/usr/bin/env python3
# /// script
# requires-python = ">=3.10"
# dependencies = ["rdkit>=2023.9"]
# ///
"""Molecular descriptors for SMILES strings (RDKit)."""

import argparse
import csv
import sys

try:
    from rdkit import Chem
    from rdkit.Chem import Crippen, Descriptors, Lipinski, rdMolDescriptors
except ImportError:
    print("Error: rdkit is not installed. Install with: pip install rdkit", file=sys.stderr)
    sys.exit(1)

COLUMNS = ["smiles", "MW", "logP", "TPSA", "HBD", "HBA", "lipinski_violations"]


def describe(smiles):
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise ValueError(f"cannot parse SMILES {smiles!r}")
    row = {"smiles": smiles, "MW": Descriptors.MolWt(mol), "logP": Crippen.MolLogP(mol),
           "TPSA": rdMolDescriptors.CalcTPSA(mol), "HBD": Lipinski.NumHDonors(mol),
           "HBA": Lipinski.NumHAcceptors(mol)}
    row["lipinski_violations"] = sum([row["MW"] > 500, row["logP"] > 5, row["HBD"] > 5,
                                      row["HBA"] > 10])
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smiles", action="append", required=True)
    parser.add_argument("--csv", help="also write the table to this CSV file")
    args = parser.parse_args()
    rows = [describe(s) for s in args.smiles]
    for row in rows:
        print("  ".join(f"{row[c]:.2f}" if isinstance(row[c], float) else str(row[c])
                        for c in COLUMNS))
    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, COLUMNS)
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
