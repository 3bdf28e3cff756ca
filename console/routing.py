from __future__ import annotations

from django.urls import path

from console import consumers

websocket_urlpatterns = [
    path("ws/jobs/", consumers.JobsConsumer.as_asgi()),
    path("ws/jobs/<uuid:job_id>/", consumers.JobConsumer.as_asgi()),
]
