"""``upload_file``: the job's input files set on a file input with CDP ``DOM.setFileInputFiles``.

The element named may be the file input itself, its label, or an element holding one (in its
subtree or its shadow root, open ones at any depth): sites hide the input behind a styled
button. The input is in the element's frame (an iframe's input is offered with its frame's
session), and only the job's input files can be set (``workers.agent.uploads``).
"""

from __future__ import annotations

import cdp
from workers.agent.actions.cdp_input import node_ids
from workers.agent.actions.elements import describe
from workers.agent.actions.registry import action
from workers.agent.context import ActionResult, JobContext
from workers.agent.errors import ActionError
from workers.jobs.model.actions import UploadFile

FILE_INPUT_JS = """function() {
  const isFile = (n) => n && n.tagName === 'INPUT' && String(n.type).toLowerCase() === 'file';
  if (isFile(this)) return [this];
  if (this.tagName === 'LABEL' && isFile(this.control)) return [this.control];
  const inside = (root, depth) => {
    const found = root.querySelector('input[type=file i]');
    if (found) return found;
    if (depth > 8) return null;
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { const f = inside(el.shadowRoot, depth + 1); if (f) return f; }
    }
    return null;
  };
  const found = (this.shadowRoot && inside(this.shadowRoot, 0)) || inside(this, 0);
  return found ? [found] : [];
}"""

@action("upload_file", UploadFile, "Put the job's input files (by name) into the file input with this index")
async def upload_file(ctx: JobContext, p: UploadFile) -> ActionResult:
    uploads = ctx.uploads
    if uploads is None:
        raise ActionError("this job has no input files, so nothing can be uploaded", action="upload_file")
    paths = uploads.paths(p.files, "upload_file")
    browser = ctx.browser
    element = await browser.target(p, "upload_file")
    found = await node_ids(element, FILE_INPUT_JS)
    if not found:
        raise ActionError(f"{describe(element.index, element)} is not a file input and holds none",
                          action="upload_file", index=element.index)
    session: cdp.CDPSession = element.session
    if len(paths) > 1:
        described = await session.send("DOM.describeNode", {"backendNodeId": found[0]})
        if "multiple" not in described["node"].get("attributes", [])[::2]:
            raise ActionError(f"the file input of {describe(element.index, element)} takes one file, not "
                              f"{len(paths)}", action="upload_file", index=element.index)
    async with browser.watch() as watch:
        await session.send("DOM.setFileInputFiles", {"files": paths, "backendNodeId": found[0]})
        await watch.settle()
    browser.invalidate()
    return ActionResult(f"put {', '.join(repr(f) for f in p.files)} into the file input of "
                        f"{describe(element.index, element)}")
