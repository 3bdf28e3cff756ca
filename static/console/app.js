// Flywheel console: live job updates over a websocket, and keyboard shortcuts. No dependencies.
(function () {
  "use strict";

  function wsUrl(path) {
    return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
  }

  function setLive(text) {
    var el = document.getElementById("live-state");
    if (el) el.textContent = text;
  }

  // Opens a socket that reconnects with back-off, unless the server closed it because we logged out.
  function follow(path, onJob, onLog) {
    var delay = 500;
    function open() {
      var ws = new WebSocket(wsUrl(path));
      ws.onopen = function () { delay = 500; setLive("live"); document.body.dataset.live = "1"; };
      ws.onmessage = function (e) {
        var msg = JSON.parse(e.data);
        if (msg.type === "job") onJob(msg);
        else if (msg.type === "log" && onLog) onLog(msg.text);
      };
      ws.onclose = function (e) {
        document.body.dataset.live = "0";
        if (e.code === 4001) { setLive("logged out"); location.href = "/login/"; return; }
        setLive("reconnecting…");
        setTimeout(open, delay);
        delay = Math.min(delay * 2, 10000);
      };
    }
    open();
  }

  function paint(root, job) {
    root.dataset.status = job.status;
    root.querySelectorAll("[data-field]").forEach(function (el) {
      var f = el.dataset.field;
      if (f === "progress") el.value = job.progress;
      else if (f === "percent") el.textContent = Math.round(job.progress * 100) + "%";
      else if (f === "status") el.innerHTML = '<span class="badge ' + job.status + '">' + job.status + "</span>" +
        (job.cancel_requested && ["queued", "running"].indexOf(job.status) >= 0 ? " (cancel requested)" : "");
      else if (f === "message") el.textContent = job.message;
      else if (f === "attempts") el.textContent = job.attempts;
      else if (f === "started_at" && job.started_at) el.textContent = job.started_at.replace("T", " ").slice(0, 19);
      else if (f === "finished_at" && job.finished_at) el.textContent = job.finished_at.replace("T", " ").slice(0, 19);
    });
  }

  function matchesFilters(table, job) {
    var s = table.dataset.filterStatus, k = table.dataset.filterKind, mine = table.dataset.filterMine;
    return (!s || s === job.status) && (!k || k === job.kind) && (!mine || job.created_by === table.dataset.me);
  }

  function newRow(job) {
    var tr = document.createElement("tr");
    tr.dataset.jobId = job.id;
    var cells = [
      '<td><a></a></td>',
      '<td class="status" data-field="status"></td>',
      '<td class="progress-cell"><progress max="1" data-field="progress"></progress> <span data-field="percent"></span></td>',
      '<td data-field="message" class="msg"></td>', "<td></td>", "<td></td>"];
    tr.innerHTML = cells.join("");
    var a = tr.querySelector("a");
    a.href = job.url; a.textContent = job.kind;
    tr.children[4].textContent = job.created_by || "—";
    tr.children[5].textContent = job.created_at.replace("T", " ").slice(0, 19);
    return tr;
  }

  function jobsPage(table) {
    var body = table.tBodies[0];
    follow(table.dataset.ws, function (msg) {
      var job = msg.job;
      var row = body.querySelector('tr[data-job-id="' + job.id + '"]');
      if (!row) {
        if (!matchesFilters(table, job)) return;
        var empty = body.querySelector("tr.empty");
        if (empty) empty.remove();
        row = newRow(job);
        body.insertBefore(row, body.firstChild);
      }
      paint(row, job);
    });
  }

  function detailPage(card) {
    var history = document.getElementById("job-history");
    var logEl = document.getElementById("job-log");
    follow(card.dataset.ws, function (msg) {
      paint(card, msg.job);
      if (msg.history) {
        var li = document.createElement("li");
        li.textContent = msg.history[0] + " " + Number(msg.history[1]).toFixed(2) + " " + msg.history[2];
        history.appendChild(li);
      }
      if (["succeeded", "failed", "cancelled"].indexOf(msg.job.status) >= 0) {
        var cancel = document.querySelector('[data-testid="cancel-job"]');
        if (cancel) cancel.closest("form").remove();
      }
    }, function (text) {
      logEl.textContent += text;
      logEl.scrollTop = logEl.scrollHeight;
    });
  }

  // Keyboard: "g j" jobs, "/" focus the filter, "n" open the start form, "?" help.
  var pendingG = false;
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)) return;
    if (pendingG && e.key === "j") { location.href = "/jobs/"; pendingG = false; return; }
    pendingG = e.key === "g";
    if (e.key === "/") { var f = document.getElementById("filter-status"); if (f) { e.preventDefault(); f.focus(); } }
    if (e.key === "n") {
      var d = document.getElementById("start-job");
      if (d) { e.preventDefault(); d.open = true; d.querySelector("select").focus(); }
    }
    if (e.key === "?") alert("g j: jobs\n/: filter\nn: start a job");
  });

  document.addEventListener("DOMContentLoaded", function () {
    window.__flywheelLoadedAt = Date.now();
    var table = document.getElementById("jobs-table");
    if (table) jobsPage(table);
    var card = document.getElementById("job");
    if (card) detailPage(card);
    var defaults = document.getElementById("kind-defaults");
    var form = document.getElementById("start-form");
    if (defaults && form) {
      var map = JSON.parse(defaults.textContent);
      form.kind.addEventListener("change", function () {
        form.config.value = JSON.stringify(map[form.kind.value] || {});
      });
    }
  });
})();
