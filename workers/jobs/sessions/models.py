"""What an interactive session is on the wire: its options, its record, its commands and replies.

A session is a browser context leased from a worker's pool and driven one command at a time by an
external agent (the HTTP API's ``/v1/sessions``, the MCP tools). The command arguments are checked
here, in the kernel, so the API refuses a bad one (422 naming the field) before any worker sees it;
the worker maps each command onto the agent's own action (``workers.session_host``). Pure
pydantic: the client imports it without Redis.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator, model_validator

from workers.jobs.model.bounds import Networks
from workers.jobs.model.browsing import Viewport, check_domains

OPEN_WAIT = 90.0  # seconds open_session waits for a worker to lease a context and open the start URL
COMMAND_WAIT = 60.0  # seconds a command waits for its reply


class SessionStatus(StrEnum):
    """Where an interactive session stands: a worker is opening it, or it takes commands."""

    opening = "opening"
    open = "open"


class ReplyCode(StrEnum):
    """Why a command failed (``SessionReply.code``); the API maps each to a status."""

    action_failed = "action_failed"  # the action ran on the page and failed
    url_blocked = "url_blocked"  # the egress policy refused the address
    start_failed = "start_failed"  # the session could not open its first page
    closed = "closed"  # the session ended before the command ran
    invalid = "invalid"  # the arguments do not fit the command


Command = Literal["navigate", "state", "click", "type", "select", "scroll", "screenshot", "tabs", "close"]
COMMANDS: tuple[Command, ...] = ("navigate", "state", "click", "type", "select", "scroll", "screenshot", "tabs",
                                 "close")
MAX_TYPED = 10_000  # characters one type command may enter

Index = Field(ge=0, description="index of the element in the session's last state, the n of [n]")


class SessionOptions(BaseModel):
    """What ``open_session`` accepts."""

    model_config = ConfigDict(extra="forbid")

    start_url: HttpUrl | None = Field(None, description="Page opened in the session's first tab.")
    allowed_networks: Networks = Field(
        default_factory=list,
        description="Private networks this session may reach (CIDRs, e.g. '10.1.0.0/16'), inside what the operator "
        "allows, as for a job (more is refused with 422).",
    )
    allowed_domains: list[str] = Field(default_factory=list, max_length=256,
                                       description="Only these domains (and subdomains), as a job's.")
    denied_domains: list[str] = Field(default_factory=list, max_length=256,
                                      description="Never these domains (and subdomains), as a job's.")
    idle_timeout: float | None = Field(
        None, gt=0, description="Seconds without a command before the session closes itself; at most "
        "BROWSERD_SESSION_IDLE_TIMEOUT (the default).")
    viewport: Viewport | None = Field(None, description="Size of the session's tabs; default: the browser's window.")

    @field_validator("allowed_domains", "denied_domains")
    @classmethod
    def _domains(cls, value: list[str]) -> list[str]:
        return check_domains(value)


class SessionRecord(BaseModel):
    """An open (or opening) session as users see it."""

    id: str
    state: SessionStatus
    created_at: datetime
    last_command_at: datetime | None = Field(None, description="When the session last got a command.")
    idle_timeout: float = Field(description="Seconds without a command before the session closes itself.")
    worker: str | None = Field(None, description="The worker whose browser holds the session.")
    url: str | None = Field(None, description="The current tab's URL after the last command.")
    start_url: str | None = None
    allowed_networks: list[str] = Field(default_factory=list)
    allowed_domains: list[str] = Field(default_factory=list)
    denied_domains: list[str] = Field(default_factory=list)
    viewport: Viewport | None = None
    tenant: str | None = Field(None, description="The tenant whose key opened it; null: the operator's.")


class SessionList(BaseModel):
    sessions: list[SessionRecord]


# --- command arguments (request bodies of the API) -----------------------------------------------


class CommandArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NavigateArgs(CommandArgs):
    url: HttpUrl = Field(description="absolute http(s) URL to open in the current tab")


class StateArgs(CommandArgs):
    text: bool = Field(False, description="also return the page's readable text (markdown), not only its elements")


class ClickArgs(CommandArgs):
    index: int = Index


class TypeArgs(CommandArgs):
    index: int = Index
    text: str = Field(max_length=MAX_TYPED, description="text that replaces the field's content")


class SelectArgs(CommandArgs):
    index: int = Index
    option: str = Field(min_length=1, description="text (or value) of the option to select")


class ScrollArgs(CommandArgs):
    direction: Literal["up", "down"] | None = Field(None, description="one screen up or down")
    text: str | None = Field(None, min_length=1, description="scroll until this text is in view")

    @model_validator(mode="after")
    def _one(self) -> ScrollArgs:
        if (self.direction is None) == (self.text is None):
            raise ValueError("give exactly one of 'direction' (up or down) or 'text'")
        return self


class NoArgs(CommandArgs):
    pass


COMMAND_ARGS: dict[Command, type[CommandArgs]] = {
    "navigate": NavigateArgs, "state": StateArgs, "click": ClickArgs, "type": TypeArgs, "select": SelectArgs,
    "scroll": ScrollArgs, "screenshot": NoArgs, "tabs": NoArgs, "close": NoArgs,
}


def check_args(name: Command, args: dict[str, Any]) -> dict[str, Any]:
    """A command's arguments validated (a worker checks them again: they crossed Redis)."""
    return COMMAND_ARGS[name].model_validate(args).model_dump(mode="json", exclude_none=True)


# --- what travels through Redis ---------------------------------------------------------------


class SessionCommand(BaseModel):
    """One request to the session's worker; its reply goes to ``session:{id}:reply:{request}``."""

    request: str
    name: Command
    args: dict[str, Any] = Field(default_factory=dict)


class SessionReply(BaseModel):
    """The worker's answer: ``ok`` with the action's result text (and ``data``), or a ``code`` and error."""

    ok: bool = True
    result: str = ""
    url: str | None = None
    code: ReplyCode | None = None
    error: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)


# --- what the API answers -------------------------------------------------------------------


class Tab(BaseModel):
    id: int = Field(description="the tab's id in this session")
    url: str
    title: str = Field(description="untrusted: the page's own title")
    current: bool


class CommandResult(BaseModel):
    """What a page command did, in the words the navigator reads (page text in it is untrusted)."""

    session_id: str
    result: str
    url: str | None = None


class SessionView(BaseModel):
    """The page as the navigator sees it: ``state`` is its tabs and element index inside the
    untrusted-content wrapper (``[n]`` are the indexes click/type/select take)."""

    session_id: str
    url: str
    title: str
    tabs: list[Tab]
    elements: int = Field(description="interactive elements indexed")
    state: str = Field(description="tabs and indexed elements, wrapped as untrusted page content")
    text: str | None = Field(None, description="the page's readable text, wrapped as untrusted (with text=true)")


class TabList(BaseModel):
    session_id: str
    tabs: list[Tab]
