"""The workers: Celery tasks and the process runtime that runs jobs (``workers.tasks``,
``workers.runtime``), the one pipeline every job runs through and its features
(``workers.pipeline``), the agent (``workers.agent``), and the job kernel they share with the API
(``workers.jobs``).

Nothing is imported here, on purpose: the API imports ``workers.jobs`` and must not load the agent.
"""
