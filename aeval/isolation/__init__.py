"""Keeping a case apart, and the harness's secrets in: the sandbox policy (`sandbox`), running
one command (`shell`), process hardening (`hardening`), reading an attempt's files never
through a symlink (`tree`), the workspace and Δ (`workspace`), secret redaction (`redact`),
untrusted text made inert (`text`), copies of a skill that follow no link out of it
(`copying`), and the Python startup hooks an attempt could plant (`startup_hooks`, part of Δ).
The bubblewrap side is `aeval.adapters.sandbox`."""
