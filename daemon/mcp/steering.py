"""Steering a running job from an MCP client: ``pause_job``, ``resume_job``, and the human-in-the-loop
pair ``hand_back_job`` (a job waiting for a human goes on) and ``send_input`` (a code sent by SMS or
e-mail, typed by the agent as a secret).

Like every tool they go through the HTTP API, so an MCP client gets the API's checks: another
tenant's job is the API's 404, a job that is not waiting is its 409, a value without the server's
secrets key its 422. ``send_input``'s value is sealed by the API and never echoed back: the tool
answers with the job's state only, as the API does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from daemon.mcp.backend import Api
from daemon.mcp.calls import api_call
from workers.jobs.model.spec import InputRequest

JobId = Annotated[str, Field(description="The id submit_job or run_task returned.", min_length=1)]

INSTRUCTIONS = """A job run with options.allow_human may ask for a person (get_job shows waiting_for_human and
its reason): do what it asks in the console or send the code it needs with send_input, then hand_back_job.
pause_job and resume_job hold and release a running job between its steps.
"""


def register(server: MCPServer, api: Api, outcome: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Add the steering tools to ``server`` (``outcome``: the job view every job tool answers with)."""

    @server.tool(annotations=ToolAnnotations(title="Pause a job", idempotentHint=True))
    async def pause_job(job_id: JobId) -> dict[str, Any]:
        """Hold a running job before its next step (its browser stays open, bounded by the server's maximum)."""
        return outcome(await api_call(api.pause(job_id)))

    @server.tool(annotations=ToolAnnotations(title="Resume a job", idempotentHint=True))
    async def resume_job(job_id: JobId) -> dict[str, Any]:
        """Let a paused job go on."""
        return outcome(await api_call(api.resume(job_id)))

    @server.tool(annotations=ToolAnnotations(title="Hand a job back", idempotentHint=True))
    async def hand_back_job(job_id: JobId) -> dict[str, Any]:
        """A person did what a job waiting for a human asked: the agent goes on (and is told the page's URL)."""
        return outcome(await api_call(api.hand_back(job_id)))

    @server.tool(annotations=ToolAnnotations(title="Send a value to a job"))
    async def send_input(job_id: JobId,
                         name: Annotated[str, Field(description=InputRequest.model_fields["name"].description)],
                         value: Annotated[str, Field(description="The value (a code); typed by the agent as "
                                                     "<secret>name</secret>, never shown to the model or echoed.")],
                         ) -> dict[str, Any]:
        """Push a value (a second factor's code sent by SMS or e-mail) to a running job; it also hands a job
        waiting for a human back."""
        return outcome(await api_call(api.send_input(job_id, name, value)))
