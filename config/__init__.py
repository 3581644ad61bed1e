"""Configuration: one pydantic-settings ``Settings`` read from ``BROWSERD_*`` variables."""

from config.settings import ConfigError, Settings, env_name, get_settings, load_settings, settings_table

__all__ = ["ConfigError", "Settings", "env_name", "get_settings", "load_settings", "settings_table"]
