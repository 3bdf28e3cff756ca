"""Background work: one thin Celery task per job kind, the job runner, and worker liveness."""
