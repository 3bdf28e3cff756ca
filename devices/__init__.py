"""Environments behind one interface: the virtual phone now, real Android devices later."""
