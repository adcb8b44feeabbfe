"""What several test folders share: the engine workspace (a job's files, its driver
runs and their output, workspace.py), the chaos runs and their record (chaos.py) and the
Kafka helpers (kafka.py). Fixtures stay in conftest.py files; their helpers live here."""
