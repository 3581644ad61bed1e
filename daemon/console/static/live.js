// The live view of a running job: its browser tab as JPEG frames, streamed only while watched; and
// taking control of it (one operator at a time): mouse, wheel and keys on the frame go to the tab.
(function () {
  "use strict";
  function start() {
    const box = document.getElementById("live");
    if (!box || !window.EventSource) return;
    const button = document.getElementById("live-toggle");
    const status = document.getElementById("live-status");
    const frame = document.getElementById("live-frame");
    let source = null;
    function stop(text) {
      if (source) source.close();
      source = null;
      button.textContent = "Watch the browser";
      status.textContent = text;
    }
    function watch() {
      source = new EventSource(box.dataset.live);
      button.textContent = "Stop watching";
      status.textContent = "waiting for a frame…";
      source.addEventListener("frame", function (e) {
        frame.src = "data:image/jpeg;base64," + e.data;
        frame.hidden = false;
        status.textContent = "live";
      });
      source.addEventListener("end", function () { stop("the job finished"); });
      source.addEventListener("error", function () {
        if (source && source.readyState === EventSource.CLOSED) stop("disconnected");
      });
    }
    button.addEventListener("click", function () {
      if (source) { stop("off"); return; }
      watch();
    });
    control(box, frame, function () { if (!source) watch(); });
  }

  function control(box, frame, ensureWatching) {
    const toggle = document.getElementById("control-toggle");
    const note = document.getElementById("control-status");
    if (!toggle) return;
    let renewal = null, queue = [], flushing = false;
    function post(url, body) {
      return fetch(url, {method: "POST", credentials: "same-origin", body: body,
                         headers: {"X-CSRF-Token": box.dataset.csrf, "Content-Type": "application/json"}});
    }
    function flush() {
      if (flushing || !queue.length) return;
      flushing = true;
      const batch = queue.splice(0, 64);
      post(box.dataset.control + "/events", JSON.stringify(batch)).then(function (r) {
        if (r.status === 409) { release("another operator controls this job"); }
      }).finally(function () { flushing = false; flush(); });
    }
    function push(event) { event.sent_at = Date.now() / 1000; queue.push(event); flush(); }
    function at(e) {
      const r = frame.getBoundingClientRect();
      return {x: Math.min(1, Math.max(0, (e.clientX - r.left) / r.width)),
              y: Math.min(1, Math.max(0, (e.clientY - r.top) / r.height))};
    }
    const buttons = ["left", "middle", "right"];
    let lastMove = 0;
    function mouse(type) {
      return function (e) {
        if (!renewal) return;
        e.preventDefault();
        if (type === "mouseMoved") { const now = Date.now(); if (now - lastMove < 50) return; lastMove = now; }
        const p = at(e);
        push({kind: "mouse", type: type, x: p.x, y: p.y, button: buttons[e.button] || "left", clicks: e.detail || 1});
      };
    }
    frame.addEventListener("mousedown", mouse("mousePressed"));
    frame.addEventListener("mouseup", mouse("mouseReleased"));
    frame.addEventListener("mousemove", mouse("mouseMoved"));
    frame.addEventListener("wheel", function (e) {
      if (!renewal) return;
      e.preventDefault();
      const p = at(e);
      push({kind: "wheel", x: p.x, y: p.y, dx: e.deltaX, dy: e.deltaY});
    }, {passive: false});
    function key(type) {
      return function (e) {
        if (!renewal) return;
        e.preventDefault();
        const mods = (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0);
        push({kind: "key", type: type, key: e.key, code: e.code, modifiers: mods,
              text: type === "keyDown" && e.key.length === 1 ? e.key : ""});
      };
    }
    document.addEventListener("keydown", key("keyDown"));
    document.addEventListener("keyup", key("keyUp"));
    function release(text) {
      if (renewal) clearInterval(renewal);
      renewal = null;
      toggle.textContent = "Take control";
      note.textContent = text;
    }
    toggle.addEventListener("click", function () {
      if (renewal) {
        post(box.dataset.handBack, "").then(function () { release("handed back: the agent goes on"); });
        return;
      }
      post(box.dataset.control, "").then(function (r) {
        if (!r.ok) { r.text().then(function () { note.textContent = r.status === 409 ? "another operator controls this job, or it is not running" : "refused"; }); return; }
        return r.json().then(function (held) {
          ensureWatching();
          toggle.textContent = "Hand back";
          note.textContent = "you control the browser (the agent is paused): click, scroll and type on the view";
          renewal = setInterval(function () { post(box.dataset.control, ""); }, held.renew_seconds * 1000);
        });
      });
    });
  }
  document.addEventListener("DOMContentLoaded", start);
})();
