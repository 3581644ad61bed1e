"""The Redis connection the store (and everything that shares its Redis) uses: made by the one factory,
``config.redis_client`` (a server URL or a Sentinel one), named here too for the store's callers."""

from __future__ import annotations

from config.redis_client import API_CONNECT_TIMEOUT, API_RETRIES, CONNECT_TIMEOUT, RETRIES, SOCKET_TIMEOUT, connect

__all__ = ["API_CONNECT_TIMEOUT", "API_RETRIES", "CONNECT_TIMEOUT", "RETRIES", "SOCKET_TIMEOUT", "connect"]
