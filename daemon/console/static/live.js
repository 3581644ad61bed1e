// The live view of a running job: its browser tab as JPEG frames, streamed only while watched.
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
    button.addEventListener("click", function () {
      if (source) { stop("off"); return; }
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
    });
  }
  document.addEventListener("DOMContentLoaded", start);
})();
