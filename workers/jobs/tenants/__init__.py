"""Tenants: API keys per team (``store``), what each may open (``ceilings``).

With no tenant created browserd is single-tenant: the operator's ``BROWSERD_API_TOKEN`` is the only
principal, as before; ``ceilings.operator_ceiling`` still bounds what a job may open for itself.
"""
