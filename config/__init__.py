"""Configuration: one pydantic-settings ``Settings`` read from ``BROWSERD_*`` variables, and logging."""

from config.logs import bind, setup_logging

from config.settings import ConfigError, Settings, env_name, get_settings, load_settings, settings_table

__all__ = ["bind", "setup_logging", "ConfigError", "Settings", "env_name", "get_settings", "load_settings", "settings_table"]
