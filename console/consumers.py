"""Websocket consumers: live job updates for the jobs page and a job's detail page.

Every socket joins its user's group, so logging out (console.signals) closes it. Origin is checked
by AllowedHostsOriginValidator in webapp/asgi.py; authentication and role are checked here, and a
refused socket is closed before the handshake completes (the client sees HTTP 403).
"""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from console.services import JOBS_GROUP, job_group, user_group

CLOSE_LOGGED_OUT = 4001


class _AuthenticatedConsumer(AsyncJsonWebsocketConsumer):
    groups_joined: list[str]

    def allowed(self, user) -> bool:
        """Every role may watch jobs (docs/roles.md)."""
        return bool(user.is_superuser or user.role)

    async def connect(self) -> None:
        self.groups_joined = []
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not self.allowed(user):
            await self.close()
            return
        topics = await self.topic_groups()
        if topics is None:
            await self.close()
            return
        for group in [user_group(user.pk), *topics]:
            await self.channel_layer.group_add(group, self.channel_name)
            self.groups_joined.append(group)
        await self.accept()

    async def topic_groups(self) -> list[str] | None:
        """The groups to follow, or None to refuse the socket."""
        return []

    async def disconnect(self, code: int) -> None:
        for group in getattr(self, "groups_joined", []):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive_json(self, content, **kwargs) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def session_closed(self, event) -> None:
        await self.close(code=CLOSE_LOGGED_OUT)

    async def job_update(self, event) -> None:
        await self.send_json({"type": "job", "job": event["job"], "history": event.get("history")})

    async def job_log(self, event) -> None:
        await self.send_json({"type": "log", "text": event["text"]})


class JobsConsumer(_AuthenticatedConsumer):
    async def topic_groups(self) -> list[str] | None:
        return [JOBS_GROUP]


class JobConsumer(_AuthenticatedConsumer):
    async def connect(self) -> None:
        await super().connect()
        if self.groups_joined:
            # The page was rendered a moment ago; send the current state so no update falls between.
            await self.send_json({"type": "job", "job": await self._snapshot(), "history": None})

    @database_sync_to_async
    def _snapshot(self) -> dict:
        from console.models import Job

        return Job.objects.select_related("created_by").get(id=self.scope["url_route"]["kwargs"]["job_id"]).to_dict()

    async def topic_groups(self) -> list[str] | None:
        job_id = self.scope["url_route"]["kwargs"]["job_id"]
        if not await self._job_exists(job_id):
            return None
        return [job_group(job_id)]

    @database_sync_to_async
    def _job_exists(self, job_id) -> bool:
        from console.models import Job

        return Job.objects.filter(id=job_id).exists()
