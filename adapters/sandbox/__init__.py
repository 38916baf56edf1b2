"""Bubblewrap: the sandbox of a case's commands (`bwrap`: ``bwrap`` and ``none``), and the
inotify watch on the skill copy (`watch`); private to `bwrap`: what the sandbox sees
(`_view`), its limits (`_limits`), the Python toolchain it runs (`_toolchain`). The policy is
`aeval.isolation.sandbox`."""
