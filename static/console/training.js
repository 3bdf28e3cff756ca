// Training page: sortable comparison table and live loss curves (polls each run's metrics endpoint).
(function () {
  "use strict";

  function sortable(table) {
    table.querySelectorAll("thead th").forEach(function (th, col) {
      th.style.cursor = "pointer";
      th.addEventListener("click", function () {
        var numeric = th.dataset.sort === "num";
        var dir = th.dataset.dir === "asc" ? "desc" : "asc";
        table.querySelectorAll("thead th").forEach(function (h) { delete h.dataset.dir; });
        th.dataset.dir = dir;
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows).filter(function (r) { return !r.classList.contains("empty"); });
        rows.sort(function (a, b) {
          var x = a.cells[col], y = b.cells[col];
          var cmp;
          if (numeric) {
            var vx = parseFloat(x.dataset.value), vy = parseFloat(y.dataset.value);
            vx = isNaN(vx) ? -Infinity : vx; vy = isNaN(vy) ? -Infinity : vy;
            cmp = vx - vy;
          } else {
            cmp = x.textContent.localeCompare(y.textContent);
          }
          return dir === "asc" ? cmp : -cmp;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }

  function draw(svg, points) {
    var line = svg.querySelector("polyline"), label = svg.querySelector("text");
    var pts = points.filter(function (p) { return typeof p.loss === "number" && isFinite(p.loss); });
    if (!pts.length) { label.textContent = "no points yet"; return; }
    var w = svg.width.baseVal.value, h = svg.height.baseVal.value, pad = 4;
    var maxStep = Math.max.apply(null, pts.map(function (p) { return p.step; })) || 1;
    var losses = pts.map(function (p) { return p.loss; });
    var lo = Math.min.apply(null, losses), hi = Math.max.apply(null, losses);
    var span = hi - lo || 1;
    line.setAttribute("points", pts.map(function (p) {
      var x = pad + (w - 2 * pad) * p.step / maxStep;
      var y = pad + 14 + (h - 2 * pad - 14) * (1 - (p.loss - lo) / span);
      return x.toFixed(1) + "," + y.toFixed(1);
    }).join(" "));
    var last = pts[pts.length - 1];
    label.textContent = "step " + last.step + " loss " + last.loss.toFixed(4);
  }

  function poll(svg) {
    fetch(svg.dataset.metricsUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) return;
        draw(svg, data.points);
        var status = document.querySelector('[data-run-status="' + data.job + '"]');
        var message = document.querySelector('[data-run-message="' + data.job + '"]');
        if (status) status.textContent = data.status;
        if (message) message.textContent = data.message;
        if (!data.terminal) setTimeout(function () { poll(svg); }, 3000);
      })
      .catch(function () { setTimeout(function () { poll(svg); }, 10000); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("table.sortable").forEach(sortable);
    document.querySelectorAll("svg.curve[data-metrics-url]").forEach(poll);
  });
})();
