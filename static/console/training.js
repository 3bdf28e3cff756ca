// Training page: sortable comparison table and live training curves (polls each run's metrics endpoint).
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

  // Live training curves. Each run's .run-curves block polls its metrics endpoint until the run is
  // terminal and redraws its small SVG charts: line charts of one metric over steps / iterations, and
  // the latest competence histogram. Hand-written SVG: a few polylines and bars need no chart library.
  var SVG_NS = "http://www.w3.org/2000/svg";
  var POLL_MS = 3000, RETRY_MS = 10000;
  var FORMAT = {
    loss: function (v) { return v.toFixed(4); },
    reward: function (v) { return v.toFixed(3); },
    success: function (v) { return (100 * v).toFixed(1) + "%"; },
    output_tokens: function (v) { return v.toFixed(1); },
    tool_calls: function (v) { return v.toFixed(2); }
  };

  function format(metric, v) {
    return (FORMAT[metric] || function (x) { return String(+x.toPrecision(4)); })(v);
  }

  // A resumed run logs again the steps after its last checkpoint: the latest line for a step wins.
  function byStep(points) {
    var seen = {};
    points.forEach(function (p) { if (typeof p.step === "number") seen[p.step] = p; });
    return Object.keys(seen).map(function (k) { return seen[k]; })
      .sort(function (a, b) { return a.step - b.step; });
  }

  function drawLine(svg, points, unit) {
    var metric = svg.dataset.metric, label = svg.dataset.label;
    var line = svg.querySelector("polyline"), dot = svg.querySelector("circle.latest");
    var value = svg.querySelector(".chart-value"), name = svg.querySelector(".chart-label");
    var pts = points.filter(function (p) { return typeof p[metric] === "number"; });
    if (!pts.length) return;
    var w = svg.width.baseVal.value, h = svg.height.baseVal.value, pad = 4, top = 18;
    var first = pts[0].step, stepSpan = pts[pts.length - 1].step - first || 1;
    var ys = pts.map(function (p) { return p[metric]; });
    var lo = Math.min.apply(null, ys), hi = Math.max.apply(null, ys);
    if (metric === "success") { lo = 0; hi = 1; }  // a rate: keep the whole scale
    var span = hi - lo;
    var coords = pts.map(function (p) {
      var x = pad + (w - 2 * pad) * (pts.length > 1 ? (p.step - first) / stepSpan : 1);
      var y = span ? top + (h - pad - top) * (1 - (p[metric] - lo) / span) : (top + h - pad) / 2;
      return [x, y];
    });
    line.setAttribute("points", coords.map(function (c) { return c[0].toFixed(1) + "," + c[1].toFixed(1); }).join(" "));
    var end = coords[coords.length - 1], last = pts[pts.length - 1];
    dot.setAttribute("cx", end[0].toFixed(1));
    dot.setAttribute("cy", end[1].toFixed(1));
    name.textContent = label + " " + format(metric, last[metric]);
    value.textContent = unit + " " + last.step;
    svg.setAttribute("aria-label", label + " over " + unit + "s: " + format(metric, last[metric]) + " at " + unit + " " +
      last.step + " (range " + format(metric, Math.min.apply(null, ys)) + " to " + format(metric, Math.max.apply(null, ys)) +
      ", " + pts.length + " points)");
  }

  function drawHistogram(svg, points, unit) {
    var latest = null;
    points.forEach(function (p) { if (Array.isArray(p.competence_hist) && p.competence_hist.length) latest = p; });
    if (!latest) return;
    var counts = latest.competence_hist, n = counts.length;
    var bars = svg.querySelector("g.bars"), value = svg.querySelector(".chart-value");
    var name = svg.querySelector(".chart-label");
    var w = svg.width.baseVal.value, pad = 4, top = 18, bottom = 52;
    var most = Math.max.apply(null, counts) || 1, total = 0, slot = (w - 2 * pad) / n, parts = [];
    while (bars.firstChild) bars.removeChild(bars.firstChild);
    counts.forEach(function (c, i) {
      var height = (bottom - top) * c / most;
      var range = (i / n).toFixed(1) + "–" + ((i + 1) / n).toFixed(1);
      var rect = document.createElementNS(SVG_NS, "rect");
      rect.setAttribute("class", "bar");
      rect.setAttribute("x", (pad + i * slot + 1).toFixed(1));
      rect.setAttribute("width", Math.max(1, slot - 2).toFixed(1));
      rect.setAttribute("y", (bottom - height).toFixed(1));
      rect.setAttribute("height", height.toFixed(1));
      rect.dataset.count = c;
      var title = document.createElementNS(SVG_NS, "title");
      title.textContent = "competence " + range + ": " + c + (c === 1 ? " task" : " tasks");
      rect.appendChild(title);
      bars.appendChild(rect);
      total += c;
      parts.push(range + ": " + c);
    });
    name.textContent = "competence, " + total + (total === 1 ? " task" : " tasks");
    value.textContent = unit + " " + latest.step;
    svg.setAttribute("aria-label", "competence histogram at " + unit + " " + latest.step + ", " + total +
      " tracked tasks: " + parts.join(", "));
  }

  function draw(block, points) {
    var unit = block.dataset.unit || "step";
    points = byStep(points);
    block.querySelectorAll("svg.curve").forEach(function (svg) { drawLine(svg, points, unit); });
    block.querySelectorAll("svg.histogram").forEach(function (svg) { drawHistogram(svg, points, unit); });
    block.dataset.points = points.length;
  }

  function poll(block) {
    fetch(block.dataset.metricsUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) return;
        draw(block, data.points);
        var status = document.querySelector('[data-run-status="' + data.job + '"]');
        var message = document.querySelector('[data-run-message="' + data.job + '"]');
        if (status) { status.textContent = data.status; status.className = "badge " + data.status; }
        if (message) message.textContent = data.message;
        if (!data.terminal) setTimeout(function () { poll(block); }, POLL_MS);
      })
      .catch(function () { setTimeout(function () { poll(block); }, RETRY_MS); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("table.sortable").forEach(sortable);
    document.querySelectorAll(".run-curves[data-metrics-url]").forEach(poll);
  });
})();
