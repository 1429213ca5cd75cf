// assemble view: live updates over server-sent events. The only script of the pages;
// it inserts HTML the server rendered (and escaped), and reads nothing else.
"use strict";
(function () {
  const main = document.querySelector("main");
  if (!main || typeof EventSource === "undefined") return;
  const live = main.dataset.live;
  if (live) {
    const source = new EventSource(live);
    const list = document.getElementById("entries");
    source.addEventListener("entries", (event) => {
      list.insertAdjacentHTML("beforeend", event.data);
    });
    source.addEventListener("totals", (event) => {
      const totals = JSON.parse(event.data);
      for (const id of ["status", "turns", "tokens"]) {
        const element = document.getElementById(id);
        if (element && typeof totals[id] === "string") element.textContent = totals[id];
      }
      const status = document.getElementById("status");
      if (status && typeof totals.status === "string") status.className = "status " + totals.status;
    });
  }
  const liveList = main.dataset.liveList;
  if (liveList) {
    const source = new EventSource(liveList);
    source.addEventListener("rows", (event) => {
      const table = document.getElementById("sessions");
      if (table) table.outerHTML = event.data;
    });
  }
})();
