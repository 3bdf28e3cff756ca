"""Signal handlers of the console."""

from __future__ import annotations

from django.contrib.auth.signals import user_logged_out
from django.dispatch import receiver


@receiver(user_logged_out)
def close_sockets_on_logout(sender, request, user, **kwargs) -> None:
    if user is not None:
        from console.services import user_sockets_close

        user_sockets_close(user_id=user.pk)
