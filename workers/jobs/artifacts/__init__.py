"""The artifact store jobs' files live in: their names and how they are served (``names``, pure),
the fsspec filesystem under ``BROWSERD_ARTIFACTS_URL`` (``store``), and large results moved out
of the record into it (``offload``)."""
