"""How much memory this process may still use, and the up-front "needs N GiB" check.

Estimates made by commands are lower bounds of what they will allocate (so a
refusal is never wrong); the available figure is the smallest of the machine's
MemAvailable, the cgroup's limit (a batch job's allocation) and the address-space
limit (``ulimit -v``).
"""

import os
import resource

from .errors import InputError

GiB = float(1 << 30)


def _meminfo_available():
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:  # pragma: no cover - not Linux
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return None


def _cgroup_available():
    try:
        with open("/proc/self/cgroup", encoding="ascii") as f:
            rel = next((ln.split(":", 2)[2].strip() for ln in f if ln.startswith("0::")), None)
        if rel is None:
            return None
        base = os.path.join("/sys/fs/cgroup", rel.lstrip("/"))
        with open(os.path.join(base, "memory.max"), encoding="ascii") as f:
            limit = f.read().strip()
        if limit == "max":
            return None
        with open(os.path.join(base, "memory.current"), encoding="ascii") as f:
            current = int(f.read().strip())
        return max(int(limit) - current, 0)
    except (OSError, ValueError, StopIteration):
        return None


def _address_space_available():
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return max(soft - int(line.split()[1]) * 1024, 0)
    except (OSError, ValueError):
        pass
    return soft  # pragma: no cover


def available_bytes():
    """Bytes this process can still allocate, or None when nothing tells."""
    figures = [f for f in (_meminfo_available(), _cgroup_available(), _address_space_available()) if f is not None]
    return min(figures) if figures else None


def check_memory(needed, what):
    """InputError 'WHAT needs N GiB of memory; M GiB are available' when it does not fit."""
    needed = int(needed)
    available = available_bytes()
    if available is not None and needed > available:
        raise InputError(
            f"{what} needs at least {needed / GiB:,.1f} GiB of memory; {available / GiB:,.1f} GiB are available"
        )
