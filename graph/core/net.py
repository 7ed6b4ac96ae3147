"""Whether a host or URL stays on this machine: the rule behind binding the API and
behind letting an LLM endpoint run without a key."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlparse


def is_loopback(host: str) -> bool:
    """True for localhost and any loopback address (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: str) -> bool:
    return is_loopback(urlparse(url).hostname or "")
