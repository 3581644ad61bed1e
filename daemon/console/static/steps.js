// The live step view of a job page: the job's server-sent events, drawn as they arrive.
// Everything from the job (URLs, action results, plans) is page-controlled text: it goes in
// with textContent only, never as HTML.
(function () {
  "use strict";
  const SVG = "http://www.w3.org/2000/svg";
  const BAR_WIDTH = 320;
  const bars = [];  // [{svg, dom, llm, action}] so every bar shares one scale
  let longest = 0;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function secs(value) { return (value || 0).toFixed(2) + " s"; }

  function layout() {
    for (const bar of bars) {
      let x = 0;
      for (const phase of ["dom", "llm", "action"]) {
        const width = longest ? (bar[phase] / longest) * BAR_WIDTH : 0;
        bar.rects[phase].setAttribute("x", x.toFixed(1));
        bar.rects[phase].setAttribute("width", width.toFixed(1));
        x += width;
      }
    }
  }

  function timeline(step) {
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("class", "timeline");
    svg.setAttribute("width", BAR_WIDTH);
    svg.setAttribute("height", "12");
    svg.setAttribute("role", "img");
    const bar = {dom: step.dom_seconds || 0, llm: step.llm_seconds || 0, action: step.action_seconds || 0, rects: {}};
    for (const phase of ["dom", "llm", "action"]) {
      const rect = document.createElementNS(SVG, "rect");
      rect.setAttribute("class", phase);
      rect.setAttribute("y", "0");
      rect.setAttribute("height", "12");
      const title = document.createElementNS(SVG, "title");
      title.textContent = phase + " " + secs(bar[phase]);
      rect.appendChild(title);
      svg.appendChild(rect);
      bar.rects[phase] = rect;
    }
    svg.setAttribute("aria-label", "dom " + secs(bar.dom) + ", llm " + secs(bar.llm) + ", action " + secs(bar.action));
    bars.push(bar);
    longest = Math.max(longest, bar.dom + bar.llm + bar.action);
    layout();
    return svg;
  }

  function action(a) {
    const item = el("li", a.ok ? "action ok" : "action failed");
    item.appendChild(el("span", "mark", a.ok ? "✓" : "✗"));
    item.appendChild(el("code", "name", a.name));
    const params = Object.assign({}, a.params || {});
    delete params.intent;
    if (a.params && a.params.intent) item.appendChild(el("span", "intent", a.params.intent));
    if (Object.keys(params).length) item.appendChild(el("code", "params", JSON.stringify(params)));
    if (a.result) item.appendChild(el("span", "result", "→ " + a.result));
    if (a.error) item.appendChild(el("span", "error", "→ " + a.error));
    item.appendChild(el("span", "muted", secs(a.seconds)));
    return item;
  }

  function plan(p) {
    const box = el("div", "plan");
    box.appendChild(el("strong", null, "Planner"));
    for (const key of ["observation", "challenges", "next_steps", "reasoning", "final_answer"]) {
      if (p[key]) {
        const line = el("p");
        line.appendChild(el("span", "key", key.replace("_", " ") + ": "));
        line.appendChild(el("span", null, p[key]));
        box.appendChild(line);
      }
    }
    if (p.done) box.appendChild(el("p", "done", "The planner says the task is done."));
    return box;
  }

  // The navigator's own words for the step: model text that may quote the page, so text only.
  function brain(b) {
    const box = el("div", "brain");
    box.appendChild(el("strong", null, "Navigator"));
    for (const [key, label] of [["evaluation_previous_goal", "evaluation"], ["memory", "memory"], ["next_goal", "next goal"]]) {
      if (!b[key]) continue;
      const line = el("p");
      line.dataset.field = key;
      line.appendChild(el("span", "key", label + ": "));
      line.appendChild(el("span", "text", b[key]));
      box.appendChild(line);
    }
    return box;
  }

  function step(data) {
    const item = el("li", "step");
    item.dataset.step = data.step;
    const head = el("div", "head");
    head.appendChild(el("strong", null, "Step " + data.step));
    if (data.url) head.appendChild(el("span", "url", data.url));
    item.appendChild(head);
    const facts = el("div", "facts");
    facts.appendChild(timeline(data));
    facts.appendChild(el("span", "timing", "dom " + secs(data.dom_seconds) + " · llm " + secs(data.llm_seconds) +
                                            " · action " + secs(data.action_seconds)));
    if (data.input_tokens || data.output_tokens) {
      facts.appendChild(el("span", "tokens", data.input_tokens + " tokens in, " + data.output_tokens + " out"));
    }
    if (data.elements !== null && data.elements !== undefined) facts.appendChild(el("span", "muted", data.elements + (data.elements === 1 ? " element" : " elements")));
    item.appendChild(facts);
    if (data.brain) item.appendChild(brain(data.brain));
    const actions = el("ul", "actions");
    for (const a of data.actions || []) actions.appendChild(action(a));
    item.appendChild(actions);
    if (data.plan) item.appendChild(plan(data.plan));
    if (data.error) item.appendChild(el("p", "error", data.error));
    const shot = screenshot(data.screenshot);
    if (shot) item.appendChild(shot);
    return item;
  }

  // The step's screenshot (an artifact; its event may come a moment before the file is stored),
  // served by the console under the page's own path, with the same session.
  function screenshot(path) {
    const name = String(path || "").split("/").pop();
    if (!/^(run-[1-9][0-9]*-)?step-[0-9]+\.jpg$/.test(name)) return null;  // SCREENSHOT in workers/jobs/artifacts/names.py
    const url = location.pathname.replace(/\/$/, "") + "/artifacts/" + name;
    const link = el("a", "shot");
    link.href = url;
    const img = el("img");
    img.alt = "screenshot at the end of this step";
    img.width = 320;
    img.loading = "lazy";
    let tries = 0;
    img.addEventListener("error", function () {
      if (++tries <= 5) setTimeout(function () { img.src = url + "?try=" + tries; }, 1000 * tries);
    });
    img.src = url;
    link.appendChild(img);
    return link;
  }

  function start() {
    const list = document.getElementById("steps");
    const status = document.getElementById("stream-status");
    if (!list || !window.EventSource) return;
    const source = new EventSource(list.dataset.events);
    const refresh = function () {
      const summary = document.getElementById("summary");
      if (window.htmx && summary) htmx.ajax("GET", location.pathname + "/summary", {target: "#summary", swap: "outerHTML"});
    };
    source.addEventListener("open", function () { status.textContent = "live"; });
    source.addEventListener("step", function (e) { list.appendChild(step(JSON.parse(e.data))); });
    source.addEventListener("state", function (e) {
      const data = JSON.parse(e.data);
      list.appendChild(el("li", "state-change state-" + data.state, "→ " + data.state + (data.attempt ? " (attempt " + data.attempt + ")" : "") + (data.run ? " (run " + data.run + ")" : "")));
      refresh();
    });
    source.addEventListener("cancel_requested", function () {
      list.appendChild(el("li", "state-change", "cancel requested"));
      refresh();
    });
    source.addEventListener("end", function () {
      source.close();
      status.textContent = "finished";
      refresh();
    });
    source.addEventListener("error", function () {
      if (source.readyState === EventSource.CLOSED) status.textContent = "disconnected";
      else status.textContent = "reconnecting…";
    });
  }

  document.addEventListener("DOMContentLoaded", start);
})();
