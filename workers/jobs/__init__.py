"""The job kernel: what a job is and where its state lives, shared by the API and the workers.

It imports only ``config`` (and its libraries: pydantic, redis, celery, prometheus-client,
fsspec, cryptography, jsonschema), never the agent, the browser layer or the HTTP API, so both
sides can use it:

    daemon (API, CLI)  ──►  workers.jobs  ◄──  workers (tasks, runtime)  ──►  workers.agent

Nothing is imported here, and no sub-package's ``__init__`` imports anything: importing one
module loads only what that module needs. Each concept has its place; its pure models (pydantic,
no Redis, Celery, fsspec or cryptography) live apart from the code that stores or sends them, so
the public client (``daemon.client``) loads the models alone.

* ``model/``: what a job is. ``status`` (``JobStatus``, ``FINAL_STATES``, ``FailureCategory``,
  ``Priority``, ``Outcome``, ``SessionState``), ``spec`` (``JobSpec`` and its options,
  ``FollowUpRequest``), ``browsing`` (proxy, headers, viewport, locale...), ``actions`` (every
  action's parameter schema, ``validate_script``), ``locators`` (``Locator``), ``result``
  (``JobResult``, ``StepRecord``, ``RunRecord``...), ``record`` (``JobRecord``, ``JobEvent``, the
  API's answers);
* ``store/``: job state in Redis. ``jobs`` (``JobStore``), ``connection`` (``connect``), ``keys``
  (every key, documented), ``codec`` (the job record's fields: the only reader and writer besides
  the Lua), ``scripts`` and ``lua/*.lua`` (the state machine), ``outcomes`` (typed transition
  outcomes: ``ClaimOutcome``, ``CancelOutcome``...), ``streams`` (events as server-sent events);
* ``lifecycle/``: around a job's run. ``submission`` (``submit_job``, ``submit_batch``),
  ``steering`` (pause, resume, follow-ups), ``cancelling``, ``finishing`` (metrics and outbox
  after a final transition);
* ``batches/``: ``models`` (``BatchRecord``, ``ResultLine``), ``store`` (``BatchStore``), ``bulk``
  (publishing thousands of messages at once);
* ``schedules/``: ``models`` (``ScheduleSpec``, ``Schedule``), ``beat`` (cron and RedBeat entries),
  ``store`` (``ScheduleStore``);
* ``sessions/``: interactive sessions. ``models`` (options, record, commands, replies), ``errors``,
  ``store`` (``SessionStore``, ``open_session``);
* ``secrets/``: ``sealing`` (Fernet: job secrets, proxy passwords), ``models`` and ``credentials``
  (named credential sets);
* ``profiles/``: auth profiles. ``models`` (``StorageState``, ``ProfileInfo``), ``store``;
* ``recipes/``: ``models``, ``templates``, ``recording`` (a recipe from a run), ``checks``
  (recipe jobs, automatic mode), ``store``;
* ``artifacts/``: ``names`` (safe names, serving headers), ``store`` (the fsspec store),
  ``offload`` (large results moved out of the record);
* ``politeness/``: ``options`` (a job's limits), ``domains`` (registrable domains), ``slots``
  (per-domain slots and spacing in Redis), ``robots`` (robots.txt and its cache);
* ``webhooks/``: ``outbox`` (webhooks a final transition owes), ``guard`` (send each once),
  ``destinations`` (which receivers are allowed);
* ``queue/``: Celery. ``names`` (queues, task names), ``limits`` (time limits), ``app`` (the
  app's configuration), ``publish`` (send tasks by name);
* ``specs/``: checking submissions. ``checks`` (``check_spec``, ``validate_jobs``,
  ``check_output_schema``), ``batch_body`` (a batch body's forms), ``streamed`` (a JSONL body
  checked line by line as it arrives), ``schema_limits`` (an output
  schema's bounds, ``SchemaTooComplex``), ``output`` (checking data against a schema, off the loop);
* ``metrics`` (every Prometheus series), ``reconcile`` (what a crash left half-done), ``live``
  (a running job's live view), ``errors`` (``JobsError``, ``SpecError``, ``QueueUnavailable``),
  ``ids`` (``new_id``, ``is_id``).
"""
