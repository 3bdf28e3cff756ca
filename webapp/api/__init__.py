"""The REST API (DRF): jobs and the current user, documented at /api/docs/."""
