#!/usr/bin/env python
"""Django's command-line utility for Flywheel. ``python manage.py up`` starts everything."""

from __future__ import annotations

import os
import sys

# Commands that never touch the database or Redis do not start the embedded servers.
NO_SERVICES = {"help", "--help", "-h", "version", "--version", "check", "makemigrations", "collectstatic",
               "up", "shell_plus", "diffsettings", "startapp", "compilemessages"}


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    command = sys.argv[1] if len(sys.argv) > 1 else "help"
    if command not in NO_SERVICES:
        from webapp.embedded import EmbeddedServiceError, ensure_for_environment

        try:
            ensure_for_environment()
        except EmbeddedServiceError as exc:
            sys.exit(f"Error: {exc}")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
