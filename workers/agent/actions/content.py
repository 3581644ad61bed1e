"""Actions that read or keep information: extraction, cached findings, and done."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

import dom

from workers.agent.actions.registry import action
from workers.agent.actions.schemas import CacheContent, Done, ExtractContent, ExtractFields
from workers.agent.context import ActionResult, JobContext
from workers.agent.errors import ActionError
from workers.agent.llm import ToolSpec, call_structured
from workers.agent.prompts import SECURITY_RULES, extractor_system
from workers.agent.wrapping import user_request

MAX_EXTRACT_CHARS = 60_000

# A selector may end in @attribute to read that attribute instead of the text (a@href).
FIELDS_JS = """(function(fields, all) {
  const out = {}, bad = [];
  const read = (node, attr) => attr ? node.getAttribute(attr) :
    ((node.innerText ?? node.textContent ?? '').trim() || (node.value ?? node.getAttribute('content') ?? ''));
  for (const [name, spec] of Object.entries(fields)) {
    const m = spec.match(/^(.*?)@([A-Za-z_:][-\\w:.]*)$/);
    const [selector, attr] = m && m[1].trim() ? [m[1], m[2]] : [spec, null];
    let nodes;
    try { nodes = Array.from(document.querySelectorAll(selector)); } catch (e) { bad.push(name); continue; }
    out[name] = all ? nodes.map(n => read(n, attr)) : (nodes.length ? read(nodes[0], attr) : null);
  }
  return {out, bad};
})"""


@action("cache_content", CacheContent, "Remember findings from the current page for later steps")
async def cache_content(ctx: JobContext, p: CacheContent) -> ActionResult:
    ctx.memory.append(p.content)
    return ActionResult(f"cached findings: {p.content}", include_in_memory=True)


@action("done", Done, "Finish the task, with the complete answer in text")
async def done(ctx: JobContext, p: Done) -> ActionResult:
    ctx.final_answer = p.text
    ctx.success = p.success
    return ActionResult(p.text, done=True, include_in_memory=True)


@action("extract_fields", ExtractFields, "Read the text of CSS-selected nodes into the job's data (scripts)")
async def extract_fields(ctx: JobContext, p: ExtractFields) -> ActionResult:
    reply = await ctx.browser.page.evaluate(f"{FIELDS_JS}({json.dumps(p.fields)}, {json.dumps(p.all)})")
    if reply["bad"]:
        raise ActionError(f"invalid CSS selector for {', '.join(reply['bad'])}", action="extract_fields")
    data = ctx.data if isinstance(ctx.data, dict) else {}
    data.update(reply["out"])
    ctx.data = data
    found = sum(1 for v in reply["out"].values() if v not in (None, []))
    return ActionResult(f"read {found} of {len(p.fields)} fields: {json.dumps(reply['out'])[:500]}",
                        include_in_memory=True)


@action("extract_content", ExtractContent, "Extract information for a goal from the whole current page")
async def extract_content(ctx: JobContext, p: ExtractContent) -> ActionResult:
    state = await ctx.browser.state()
    text = state.text()
    if ctx.llms is None:
        return _store_text(ctx, state.url, text)
    tool, wrapped = _extraction_tool(ctx.spec.output_schema)
    goal = p.goal or "the information the task asks for"
    messages = [
        SystemMessage(extractor_system(SECURITY_RULES)),
        HumanMessage(f"{user_request(f'Task: {ctx.task}' + chr(10) + f'Extract: {goal}')}\n"
                     f"Page {state.url}:\n{dom.wrap_text(text[:MAX_EXTRACT_CHARS])}"),
    ]
    reply = await call_structured(ctx.llms.for_role("extractor"), messages, tool, role="extractor",
                                  cancel=ctx.cancel, retry=ctx.llms.retry)
    ctx.usage.add(reply.input_tokens, reply.output_tokens, reply.seconds)
    value: Any = reply.data.get("data") if wrapped else reply.data
    if ctx.spec.output_schema is not None:
        ctx.data = value
    shown = value.get("content") if isinstance(value, dict) and ctx.spec.output_schema is None else value
    return ActionResult(f"extracted from {state.url}: {_short(shown)}", include_in_memory=True)


def _store_text(ctx: JobContext, url: str, text: str) -> ActionResult:
    """Without a model, the page's readable text is the extraction."""
    if isinstance(ctx.data, dict):
        ctx.data["content"] = text
    else:
        ctx.data = text
    return ActionResult(f"stored the text of {url} ({len(text)} characters)")


def _extraction_tool(schema: dict[str, Any] | None) -> tuple[ToolSpec, bool]:
    """The function the extractor fills: the job's schema (wrapped if it is not an object)."""
    description = "the information extracted from the page"
    if schema is None:
        params = {"type": "object", "properties": {"content": {"type": "string", "description": description}},
                  "required": ["content"]}
        return ToolSpec("ExtractedContent", description, params), False
    if schema.get("type") == "object":
        return ToolSpec("ExtractedContent", description, schema), False
    return ToolSpec("ExtractedContent", description,
                    {"type": "object", "properties": {"data": schema}, "required": ["data"]}), True


def _short(value: Any, limit: int = 2000) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."
