"""Configuration: one pydantic-settings ``Settings`` read from ``BROWSERD_*`` variables, and logging."""

from config.logs import bind, note, scrub_with, setup_logging
from config.settings import (
    DEFAULT_MAX_TOKENS,
    MODEL_PARAMS,
    ROLES,
    ConfigError,
    OutputMethod,
    ReasoningEffort,
    Role,
    Settings,
    env_name,
    get_settings,
    load_settings,
    settings_table,
)

__all__ = ["bind", "note", "scrub_with", "setup_logging", "DEFAULT_MAX_TOKENS", "MODEL_PARAMS", "OutputMethod", "ROLES", "ReasoningEffort", "Role", "ConfigError", "Settings", "env_name", "get_settings", "load_settings", "settings_table"]
