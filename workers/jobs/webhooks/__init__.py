"""Webhooks: the outbox a final transition fills and whoever comes next runs (``outbox``), the
task's send-once guard (``guard``), and which receiver addresses are allowed (``destinations``)."""
