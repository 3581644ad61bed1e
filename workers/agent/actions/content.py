"""Actions that read or keep information: extraction, cached findings, and done."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

import dom
from workers.agent.actions.registry import action
from workers.agent.context import ActionResult, JobContext
from workers.agent.errors import ActionError, LLMOutputError
from workers.agent.findings import short
from workers.agent.llm import LLMReply, ToolSpec, call_structured
from workers.agent.merge import without_extensions
from workers.agent.prompts import SECURITY_RULES, extractor_system
from workers.agent.wrapping import user_request
from workers.jobs.model.actions import CacheContent, Done, ExtractContent, ExtractFields

CHUNK_CHARS = 60_000  # page text per extractor call; a longer page is read in chunks

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
    ctx.findings.cache(p.content)
    return ActionResult(f"cached findings: {p.content}")


@action("done", Done, "Finish the task, with the complete answer in text")
async def done(ctx: JobContext, p: Done) -> ActionResult:
    ctx.final_answer = p.text
    ctx.success = p.success
    ctx.outcome = p.outcome
    ctx.evidence = list(p.evidence or [])
    return ActionResult(p.text, done=True)


@action("extract_fields", ExtractFields, "Read the text of CSS-selected nodes into the job's data (scripts)")
async def extract_fields(ctx: JobContext, p: ExtractFields) -> ActionResult:
    reply = await ctx.browser.page.evaluate(f"{FIELDS_JS}({json.dumps(p.fields)}, {json.dumps(p.all)})")
    if reply["bad"]:
        raise ActionError(f"invalid CSS selector for {', '.join(reply['bad'])}", action="extract_fields")
    data = ctx.data if isinstance(ctx.data, dict) else {}
    data.update(reply["out"])
    ctx.data = data
    found = sum(1 for v in reply["out"].values() if v not in (None, []))
    return ActionResult(f"read {found} of {len(p.fields)} fields: {json.dumps(reply['out'])[:500]}")


@action("extract_content", ExtractContent, "Extract information for a goal from the whole current page")
async def extract_content(ctx: JobContext, p: ExtractContent) -> ActionResult:
    limit = ctx.config.actions.max_extract_chars
    document = await ctx.browser.document(limit)  # a PDF the tab shows (or the page downloaded) is read instead
    if document is not None:
        url, full = document.url, document.text
    else:
        state = await ctx.browser.state()
        url, full = state.url, state.text()
    text = _capped(full, limit)
    if ctx.llms is None:
        return _store_text(ctx, url, text)
    schema = ctx.spec.output_schema
    goal = p.goal or "the information the task asks for"
    chunks = split_text(text, CHUNK_CHARS)  # the text is already capped (BROWSERD_MAX_EXTRACT_CHARS)
    values = [await _extract_chunk(ctx, goal, url, chunk, i, len(chunks)) for i, chunk in enumerate(chunks, 1)]
    if schema is None:
        values = ["\n".join(str(v.get("content") or "") if isinstance(v, dict) else str(v) for v in values)]
    ctx.findings.extracted(goal, url, values, structured=schema is not None)
    parts = f" ({len(chunks)} parts)" if len(chunks) > 1 else ""
    unread = (f"; the page's text after {limit:,} characters was not read "
              "(BROWSERD_MAX_EXTRACT_CHARS)" if len(full) > limit else "")
    unread += f"; {document.summary()}" if document is not None and document.pages < document.total else ""
    so_far = ctx.findings.summary(schema)
    shown = values[0] if len(values) == 1 else values
    return ActionResult(f"extracted from {url}{parts}: {short(shown, 2000)}{unread}"
                        f"{'; ' + so_far if so_far else ''}")


async def _extract_chunk(ctx: JobContext, goal: str, url: str, chunk: str, number: int, count: int) -> Any:
    """One extractor call on one chunk of the page's text; the value it found."""
    assert ctx.llms is not None
    tool, wrapped = _extraction_tool(ctx.spec.output_schema)
    part = f" (part {number} of {count}; the other parts are read separately)" if count > 1 else ""
    page = dom.wrap_text(f"Page {url}{part}:\n{chunk}")  # the URL is the page's too
    request = user_request(f"Task: {ctx.task}\nExtract: {goal}")
    messages = [
        SystemMessage(extractor_system(SECURITY_RULES)),
        HumanMessage(ctx.secrets.scrub(f"{request}\n{page}")),
    ]
    try:
        reply = await call_structured(ctx.llms.for_role("extractor"), messages, tool, role="extractor",
                                      cancel=ctx.cancel, retry=ctx.llms.retry, telemetry=ctx.telemetry,
                                      method=ctx.llms.output("extractor"))
    except LLMOutputError as exc:
        if isinstance(exc.reply, LLMReply):  # an unusable extraction still cost its tokens
            ctx.usage.add(exc.reply.input_tokens, exc.reply.output_tokens, exc.reply.seconds)
        raise
    ctx.usage.add(reply.input_tokens, reply.output_tokens, reply.seconds)
    return reply.data.get("data") if wrapped else reply.data


def split_text(text: str, size: int) -> list[str]:
    """``text`` in chunks of at most ``size`` characters, cut between lines where a line allows it."""
    chunks: list[str] = []
    current: list[str] = []
    length = 0
    for line in text.splitlines(keepends=True):
        while len(line) > size:  # a single line longer than a chunk is cut where it must be
            chunks.extend(["".join(current)] if current else [])
            current, length = [], 0
            chunks.append(line[:size])
            line = line[size:]
        if length + len(line) > size:
            chunks.append("".join(current))
            current, length = [], 0
        current.append(line)
        length += len(line)
    if current or not chunks:
        chunks.append("".join(current))
    return chunks


def _capped(text: str, limit: int) -> str:
    """At most ``limit`` characters of page text per call (BROWSERD_MAX_EXTRACT_CHARS), saying so."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... cut at {limit} of {len(text)} characters: BROWSERD_MAX_EXTRACT_CHARS]"


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
    schema = without_extensions(schema)
    if schema.get("type") == "object":
        return ToolSpec("ExtractedContent", description, schema), False
    return ToolSpec("ExtractedContent", description,
                    {"type": "object", "properties": {"data": schema}, "required": ["data"]}), True
