"""Secrets at rest: Fernet sealing of a job's secrets and a proxy password (``sealing``), and named
credential sets jobs refer to (``models``, ``credentials``)."""
