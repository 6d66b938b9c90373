// Live updates over graphql-transport-ws to same-origin /graphql (no framework, no other host).
// Keeps the last event cursor and resubscribes with `after` after a drop, so nothing is missed.
(function () {
  "use strict";
  function subscribe(query, variables, onData, status) {
    let lastCursor = null, retry = 500;
    function connect() {
      const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/graphql";
      const ws = new WebSocket(url, "graphql-transport-ws");
      ws.onopen = () => ws.send(JSON.stringify({ type: "connection_init", payload: {} }));
      ws.onmessage = (message) => {
        const msg = JSON.parse(message.data);
        if (msg.type === "connection_ack") {
          retry = 500;
          status("live");
          ws.send(JSON.stringify({ id: "1", type: "subscribe", payload: { query, variables: Object.assign({}, variables, { after: lastCursor }) } }));
        } else if (msg.type === "ping") {
          ws.send(JSON.stringify({ type: "pong" }));
        } else if (msg.type === "next" && msg.payload && msg.payload.data) {
          const event = Object.values(msg.payload.data)[0];
          if (event && event.cursor) lastCursor = event.cursor;
          onData(event);
        } else if (msg.type === "error") {
          status("live updates refused: " + JSON.stringify(msg.payload));
        }
      };
      ws.onclose = () => {
        status("reconnecting…");
        setTimeout(connect, retry);
        retry = Math.min(retry * 2, 15000);
      };
    }
    connect();
  }

  function statusLine(text) {
    const el = document.getElementById("live-status");
    if (el) el.textContent = text === "live" ? "Live: new runs appear here without a reload." : text;
  }

  // Swap regions of this page with the same regions of a freshly rendered copy of it. Events can
  // come in bursts: only the newest refresh is applied, so an older answer never wins.
  let refreshes = 0;
  async function refresh(ids) {
    const mine = ++refreshes;
    const response = await fetch(location.href, { headers: { Accept: "text/html" } });
    if (!response.ok) return;
    const html = await response.text();
    if (mine !== refreshes) return;
    const fresh = new DOMParser().parseFromString(html, "text/html");
    for (const id of ids) {
      const now = document.getElementById(id), next = fresh.getElementById(id);
      if (now && next) now.replaceWith(document.importNode(next, true));
    }
  }

  function text(tag, content, href) {
    const el = document.createElement(tag);
    if (href) el.href = href;
    el.textContent = content;
    return el;
  }

  const EVIDENCE = { REPORTED: "Reported", REPRODUCIBLE: "Reproducible", KERNELINDEX_VERIFIED: "KernelIndex Verified", INDEPENDENTLY_REPLICATED: "Independently Replicated" };

  window.KernelIndexLive = {
    newestRuns(list) {
      const limit = Number(list.dataset.limit || 10);
      subscribe(
        "subscription($after: String) { runPublished(after: $after) { cursor run { digest title name observedAt evidenceLevel primaryMeasurement { display } environment { gpu { display } } } } }",
        {},
        (event) => {
          const run = event.run;
          if (list.querySelector(`li[data-digest="${run.digest}"]`)) return;
          const li = document.createElement("li");
          li.dataset.digest = run.digest;
          li.append(text("a", run.title || run.name, "/runs/" + run.digest),
            ` · ${run.primaryMeasurement.display} · ${run.environment.gpu.display} · ${EVIDENCE[run.evidenceLevel] || run.evidenceLevel} · observed ${run.observedAt.slice(0, 10)}`);
          list.prepend(li);
          while (list.children.length > limit) list.lastElementChild.remove();
        },
        statusLine,
      );
    },
    group(id, regions) {
      subscribe(
        "subscription($id: ID!, $after: String) { comparisonGroupChanged(id: $id, after: $after) { cursor leaderChanged size newLeader { title } } }",
        { id },
        async (event) => {
          await refresh(regions);
          const when = new Date().toLocaleTimeString();
          statusLine(event.leaderChanged && event.newLeader ? `Updated ${when}: new #1 ${event.newLeader.title}` : `Updated ${when}: ${event.size} runs`);
        },
        (s) => statusLine(s === "live" ? "Live: this leaderboard updates without a reload." : s),
      );
    },
  };

  // Pages start it from the script tag's data attributes (no inline script: the pages' CSP
  // allows scripts from this origin only).
  const tag = document.currentScript;
  if (tag?.dataset.live === "newest-runs") window.KernelIndexLive.newestRuns(document.getElementById(tag.dataset.list));
  if (tag?.dataset.live === "group") window.KernelIndexLive.group(tag.dataset.group, tag.dataset.regions.split(" "));
})();
