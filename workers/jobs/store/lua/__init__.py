"""The store's Lua scripts, one ``.lua`` file each: package data, read by ``workers.jobs.store.scripts``.

``job_*`` are the job state machine's transitions (after ``job_prelude.lua``), ``batch_*`` a
batch's, ``session_*`` the interactive sessions', ``politeness_*`` the per-domain slots and
spacing (after ``clock_prelude.lua``), ``profile_put`` an auth profile's versioned write. A first
line ``--! prelude: NAME`` puts ``NAME.lua`` before the script's text.
"""
