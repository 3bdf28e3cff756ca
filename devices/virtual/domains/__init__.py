"""One module per functional domain of the virtual phone; each defines ``DOMAIN`` (see registry.py)."""
