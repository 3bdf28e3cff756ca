"""The REST API (DRF), documented at /api/docs/: jobs and the current user (``views``), and the data
flywheel's rounds, tasks, trajectories, review queues, decision log and datasets (``data_views``)."""
