// clawmem console: the overview's live panel, and the error page's back link.
// Everything else works without script.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const live = document.querySelector("[data-live]");
  if (live && window.EventSource) {
    const src = new EventSource(live.getAttribute("data-live"));
    // The server renders the panel with its templates (escaped): it is
    // this page's own markup, not data.
    src.onmessage = (e) => { live.innerHTML = e.data; };
  }
  for (const a of document.querySelectorAll("a[data-back]")) {
    a.addEventListener("click", (e) => {
      if (history.length > 1) {
        e.preventDefault();
        history.back();
      }
    });
  }
});
