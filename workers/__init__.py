"""The workers: Celery tasks and the process runtime that runs jobs (``workers.tasks``,
``workers.runtime``, ``workers.delivery``, ``workers.politeness``), the agent (``workers.agent``),
and the job kernel they share with the API (``workers.jobs``).

Nothing is imported here, on purpose: the API imports ``workers.jobs`` and must not load the agent.
"""
