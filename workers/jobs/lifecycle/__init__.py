"""A job's life around its run: submitting it (``submission``), steering it (``steering``: pause,
resume, follow-ups), cancelling it (``cancelling``) and what follows its end (``finishing``)."""
