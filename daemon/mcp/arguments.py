"""Tools that take one pydantic model, while their JSON arguments stay flat.

The MCP SDK makes a tool's input schema from its function's parameters, one argument per
parameter, and calls it with them as keywords. A tool with many arguments (``run_task``,
``submit_job``) would be a function with as many parameters; ``flat(Model)`` lets it take one
``Model`` instead: the SDK is shown the model's fields as the parameters (so the schema, and what
clients send, are exactly the fields, flat, as before), and the tool gets them validated as one
object. A tool that reports progress takes the request's ``Context`` too, as its second argument.

``StrictServer`` refuses a call that names an argument its tool does not take: the SDK would drop
it silently, and a caller's ``allowed_network`` (for ``allowed_networks``) or ``max_step`` would
just not apply, with nothing said.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
CONTEXT = "ctx"  # the parameter name the SDK hands the request's Context to


def flat(model: type[M]) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """Decorate ``tool(args: model)`` or ``tool(args: model, ctx: Context)``: the SDK sees one
    parameter per field of ``model`` (and ``ctx``), the tool gets ``model(**fields)``."""

    def wrap(tool: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        signature = inspect.signature(tool, eval_str=True)
        wants_context = CONTEXT in signature.parameters
        params = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[field.annotation, field],
                                    default=inspect.Parameter.empty if field.is_required() else field.default)
                  for name, field in model.model_fields.items()]
        if wants_context:
            params.append(inspect.Parameter(CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=Context))

        async def run(**fields: Any) -> Any:
            context = fields.pop(CONTEXT, None)
            args = model.model_validate(fields)
            return await (tool(args, context) if wants_context else tool(args))

        run.__name__, run.__qualname__, run.__doc__ = tool.__name__, tool.__qualname__, tool.__doc__
        run.__signature__ = inspect.Signature(params, return_annotation=signature.return_annotation)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params} | {"return": signature.return_annotation}
        return run

    return wrap


class StrictServer(MCPServer):
    """An ``MCPServer`` whose tools refuse arguments they do not take, naming them and the ones they do."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        schema = next((tool.input_schema for tool in await self.list_tools() if tool.name == name), None)
        known = set((schema or {}).get("properties") or {})
        unknown = sorted(set(arguments) - known) if schema is not None else []
        if unknown:
            names = ", ".join(repr(n) for n in unknown)
            raise ToolError(f"Error executing tool {name}: unknown argument{'s' if len(unknown) > 1 else ''} {names}; "
                            f"{name} takes {', '.join(sorted(known)) or 'no arguments'}")
        return await super().call_tool(name, arguments, context)


__all__ = ["StrictServer", "flat"]
