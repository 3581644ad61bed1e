"""The Celery side of the kernel: queue and task names (``names``) and time limits (``limits``),
both pure; the app's configuration (``app``); publishing tasks by name (``publish``)."""
