"""What of the host a case's sandbox shows, by name: the system trees and the few files of
/etc that commands need (`aeval.adapters.sandbox._view` builds the view from these lists).

The verdicts read it too: an absolute path a documented command names outside these (and
outside the skill copy) is a path of the reader's machine, which no case has (``/var/log``,
``/srv/data``), however the host that runs aeval looks.
"""

from __future__ import annotations

import posixpath

SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_NAMES = (
    "passwd", "group", "nsswitch.conf", "hosts", "host.conf", "gai.conf", "networks",
    "protocols", "services", "ssl", "ca-certificates", "ca-certificates.conf", "pki",
    "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone",
    "locale.alias", "locale.conf", "default/locale", "os-release", "debian_version",
    "lsb-release", "profile", "bash.bashrc", "inputrc", "mime.types", "magic", "magic.mime",
    "python3", "perl", "gitconfig", "mailcap", "xdg",
)
"""What of the host's /etc a command sees (when the host has it): nothing that holds a
credential (shadow files, pip.conf, npmrc, netrc), a machine's identity (machine-id) or a
service's configuration."""
_OWN = ("/dev", "/proc")  # the sandbox's own, never the host's files


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def shown_by_name(path: str) -> bool:
    """Whether an absolute ``path`` lies where a case's view shows the host (a system tree,
    an /etc name of `ETC_NAMES`) or the sandbox's own /dev and /proc. Lexical: ``..`` is
    resolved, no link followed."""
    p = posixpath.normpath(path)
    if any(_under(p, t) for t in (*SYSTEM_TREES, *_OWN)):
        return True
    return any(_under(p, f"/etc/{name}") for name in ETC_NAMES)
