from __future__ import annotations

from django.apps import AppConfig


class WorkersConfig(AppConfig):
    name = "workers"

    def ready(self) -> None:
        from workers import kinds, liveness

        kinds.load()
        liveness.connect()
