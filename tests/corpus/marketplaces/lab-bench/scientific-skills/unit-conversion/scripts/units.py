"""Unit tables shared by convert.py and dilute.py."""

MASS_CONC = {"g/L": 1.0, "mg/mL": 1.0, "ug/mL": 1e-3, "ng/mL": 1e-6, "mg/L": 1e-3}
MOLAR = {"M": 1.0, "mM": 1e-3, "uM": 1e-6, "nM": 1e-9}
VOLUME = {"L": 1.0, "mL": 1e-3, "uL": 1e-6}


def normalize(unit):
    return unit.replace("µ", "u")


def kind(unit):
    unit = normalize(unit)
    for name, table in (("mass", MASS_CONC), ("molar", MOLAR), ("volume", VOLUME)):
        if unit in table:
            return name, table[unit]
    raise ValueError(f"unknown unit {unit!r}")
