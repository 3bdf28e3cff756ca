"""The Celery application; its configuration is the CELERY_* names in webapp/settings.py."""

from __future__ import annotations

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

QUEUES = ("default", "collect", "train")

app = Celery("flywheel")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [Queue(name) for name in QUEUES]
app.autodiscover_tasks(["workers"])
