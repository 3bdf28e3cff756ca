"""The Flywheel Django project: settings, URLs, ASGI entry point, Celery app, embedded services."""

from webapp.celery import app as celery_app

__all__ = ["celery_app"]
