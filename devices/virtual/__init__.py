"""The virtual phone: a deterministic, seeded sandbox of live app databases (pure Python, no Django)."""

from devices.virtual.phone import Screen, VirtualPhone

__all__ = ["Screen", "VirtualPhone"]
