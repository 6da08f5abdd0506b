// Draws the report's charts with uPlot from the JSON embedded in the page.
// It reads nothing else: the page works offline from disk.
(function () {
  "use strict";
  var sum = JSON.parse(document.getElementById("hload-data").textContent);
  var s = sum.series;
  // No grey: grey is for the axes, the grid and the stage marks.
  var palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
    "#e377c2", "#17becf", "#bcbd22", "#000080"];
  var charts = [];
  if (!s || !s.time_s || s.time_s.length === 0) {
    document.body.setAttribute("data-charts", "0");
    return;
  }

  // marks draws the stage boundaries (grey, dashed) and the warnings said
  // during the run (red for the generator self-check, orange otherwise).
  function marks(stages) {
    return function (u) {
      var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
      function line(x, colour, dash) {
        var px = Math.round(u.valToPos(x, "x", true));
        if (px < u.bbox.left || px > u.bbox.left + u.bbox.width) return;
        ctx.save();
        ctx.strokeStyle = colour;
        ctx.lineWidth = 2;
        ctx.setLineDash(dash);
        ctx.beginPath();
        ctx.moveTo(px, top);
        ctx.lineTo(px, top + h);
        ctx.stroke();
        ctx.restore();
      }
      (stages || []).forEach(function (t) { line(t, "#888", [6, 4]); });
      (s.events || []).forEach(function (e) {
        line(e.time_s, e.text.indexOf("hload is saturated") === 0 ? "#d00" : "#f90", []);
      });
    };
  }

  // chart adds one chart to parent: lines is [{label, values, dash}].
  function chart(parent, title, unit, lines, stages) {
    var div = document.createElement("div");
    div.className = "chart";
    div.setAttribute("data-title", title);
    parent.appendChild(div);
    var series = [{ label: "s" }];
    var data = [s.time_s];
    var long = s.time_s.length >= 300;
    lines.forEach(function (l, i) {
      // Dots where a line has few values: a lone value (a stream's one
      // connect) draws no line.
      var n = (l.values || []).filter(function (v) { return v !== null; }).length;
      var colour = l.colour || palette[i % palette.length];
      // A dashed line costs much more to draw than a plain one: a long
      // run's secondary lines (errors/s, p50, p95) are drawn fainter
      // instead, and thinner, which keeps a 1-hour report quick to open.
      var dash = l.dash;
      if (long && dash) {
        colour += l.dash[0] <= 2 ? "55" : "99";
        dash = undefined;
      }
      series.push({ label: l.label, stroke: colour, width: long ? 1 : 2, dash: dash,
        points: { show: n < 60, size: n <= 2 ? 10 : 5 } });
      data.push(l.values);
    });
    var width = Math.max(400, Math.min(1100, (parent.clientWidth || 1000) - 10));
    charts.push(new uPlot({
      title: title, width: width, height: 240,
      scales: { x: { time: false } },
      axes: [{ label: "seconds since start" }, { label: unit }],
      series: series,
      hooks: { draw: [marks(stages)] }
    }, data, div));
  }

  (s.scenarios || []).forEach(function (sc) {
    var parent = document.querySelector('.charts[data-scenario="' + CSS.escape(sc.name) + '"]');
    if (!parent) return;
    var rates = [], lat = [];
    (sc.requests || []).forEach(function (r, i) {
      var c = palette[i % palette.length];
      rates.push({ label: r.name + " requests/s", values: r.rps, colour: c });
      rates.push({ label: r.name + " errors/s", values: r.errors_per_s, colour: c, dash: [4, 3] });
      lat.push({ label: r.name + " p50", values: r.latency_p50_ms, colour: c, dash: [2, 3] });
      lat.push({ label: r.name + " p95", values: r.latency_p95_ms, colour: c, dash: [8, 3] });
      lat.push({ label: r.name + " p99", values: r.latency_p99_ms, colour: c });
    });
    chart(parent, "requests/s and errors/s", "per second", rates, sc.stages_s);
    chart(parent, "latency p50, p95, p99", "ms", lat, sc.stages_s);
    if (sc.model === "open") {
      chart(parent, "planned and achieved rate", "iterations/s", [
        { label: "planned", values: sc.planned, dash: [6, 4] },
        { label: "achieved (iterations ended/s)", values: sc.iterations_per_s },
        { label: "dropped/s", values: sc.dropped_per_s },
        { label: "active VUs", values: sc.vus }], sc.stages_s);
    } else {
      chart(parent, "VUs", "VUs", [
        { label: "planned VUs", values: sc.planned, dash: [6, 4] },
        { label: "active VUs", values: sc.vus },
        { label: "iterations ended/s", values: sc.iterations_per_s }], sc.stages_s);
    }
  });

  // Protocol panels: one chart per metric, a line per request (its p50,
  // p95 and p99 for a timed metric, its rate for a count).
  var proto = document.getElementById("protocol-charts");
  if (proto) {
    var byMetric = {};
    (s.scenarios || []).forEach(function (sc) {
      (sc.requests || []).forEach(function (r) {
        (r.metrics || []).forEach(function (m) {
          (byMetric[m.name] = byMetric[m.name] || []).push({ who: sc.name + "/" + r.name, m: m });
        });
      });
    });
    Object.keys(byMetric).sort().forEach(function (name) {
      var lines = [], timed = false;
      byMetric[name].forEach(function (x, i) {
        var c = palette[i % palette.length];
        if (x.m.p95_ms && x.m.p95_ms.length) {
          timed = true;
          lines.push({ label: x.who + " p50", values: x.m.p50_ms, colour: c, dash: [2, 3] });
          lines.push({ label: x.who + " p95", values: x.m.p95_ms, colour: c, dash: [8, 3] });
          lines.push({ label: x.who + " p99", values: x.m.p99_ms, colour: c });
        } else {
          lines.push({ label: x.who + " per second", values: x.m.per_s, colour: c });
        }
      });
      chart(proto, name, timed ? "ms" : "per second", lines, []);
    });
    if (s.gauges) {
      var gl = Object.keys(s.gauges).sort().map(function (g) { return { label: g, values: s.gauges[g] }; });
      chart(proto, "gauges at the end of each point", "level", gl, []);
    }
  }
  document.body.setAttribute("data-charts", String(charts.length));
})();
