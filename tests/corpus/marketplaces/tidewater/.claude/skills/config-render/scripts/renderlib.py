"""Settings loading and {{ key }} substitution for render.py."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")


class MissingKey(KeyError):
    pass


def load_config(folder: Path, env: str) -> dict:
    cfg = tomllib.loads((folder / "defaults.toml").read_text())
    extra = folder / f"{env}.toml"
    if extra.exists():
        cfg.update(tomllib.loads(extra.read_text()))
    return cfg


def render(text: str, cfg: dict) -> str:
    def sub(m: re.Match) -> str:
        key = m.group(1)
        if key not in cfg:
            raise MissingKey(key)
        return str(cfg[key])
    return PLACEHOLDER.sub(sub, text)
