"""Record a page's DOMSnapshot reply as a JSON fixture for ``dom.capture.build`` unit tests.

    python -m tests.support.record_snapshot tests/fixtures/site/dom/controls.html out.json

The fixture holds the raw ``DOMSnapshot.captureSnapshot`` reply of the main frame (same
parameters as ``dom.snapshot``), so the analysis can be tested with no browser.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from cdp import BrowserPool, PoolConfig
from dom import snapshot
from tests.support.servers import serve


async def record(page_path: Path, out: Path) -> None:
    with serve(page_path.parent) as site:
        config = PoolConfig(browsers=1, warm=0)
        async with BrowserPool(config) as pool, pool.lease() as lease:
            await lease.page.goto(site.url("/" + page_path.name))
            reply = await snapshot.take(lease.page.session)
    out.write_text(json.dumps(reply, separators=(",", ":")))


if __name__ == "__main__":
    asyncio.run(record(Path(sys.argv[1]), Path(sys.argv[2])))
