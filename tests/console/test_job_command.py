"""`manage.py job run`: enqueue, follow with a progress bar, clear errors for bad input."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from console.models import Job, JobStatus

pytestmark = [pytest.mark.slow]


def test_job_run_follows_progress_to_success(worker):
    out = StringIO()
    call_command("job", "run", "demo.sleep", "--config", '{"seconds": 1, "steps": 4}', "--timeout", "120",
                 stdout=out)
    text = out.getvalue()
    assert "Enqueued demo.sleep job" in text
    assert "[" + "#" * 30 + "] 100.0%" in text
    assert "succeeded" in text
    assert Job.objects.get().status == JobStatus.SUCCEEDED


def test_job_run_refuses_bad_config_with_field_message(transactional_db):
    with pytest.raises(CommandError, match=r"steps: must be at least 1"):
        call_command("job", "run", "demo.sleep", "--config", '{"steps": 0}', stdout=StringIO())
    with pytest.raises(CommandError, match="not valid JSON"):
        call_command("job", "run", "demo.sleep", "--config", "{steps", stdout=StringIO())
    with pytest.raises(CommandError, match="Unknown job kind"):
        call_command("job", "run", "demo.nap", stdout=StringIO())
    assert Job.objects.count() == 0
