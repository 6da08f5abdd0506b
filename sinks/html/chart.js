// The charts' machinery, shared by the report and the comparison page:
// one uPlot chart per call, over any x (seconds, or a capacity search's
// loads), with an optional second y axis on the right.
var hloadCharts = (function () {
  "use strict";
  // No grey: grey is for the axes, the grid and the marks of stages.
  var palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
    "#e377c2", "#17becf", "#bcbd22", "#000080"];
  var drawn = 0;

  // vline draws a vertical line at x across the plot of u.
  function vline(u, x, colour, dash) {
    var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
    var px = Math.round(u.valToPos(x, "x", true));
    if (px < u.bbox.left || px > u.bbox.left + u.bbox.width) return;
    ctx.save();
    ctx.strokeStyle = colour;
    ctx.lineWidth = 2;
    ctx.setLineDash(dash || []);
    ctx.beginPath();
    ctx.moveTo(px, top);
    ctx.lineTo(px, top + h);
    ctx.stroke();
    ctx.restore();
  }

  // chart adds one chart to parent. o has title, xs (the x values),
  // xLabel, unit (the left axis), unit2 (the right axis, for lines with
  // right: true), lines ([{label, values, colour, dash, right}]) and draw
  // (a hook that draws marks).
  function chart(parent, o) {
    var div = document.createElement("div");
    div.className = "chart";
    div.setAttribute("data-title", o.title);
    // How many points it has: a test of the live page sees them grow.
    div.setAttribute("data-points", String(o.xs.length));
    parent.appendChild(div);
    var series = [{ label: o.xLabel }];
    var data = [o.xs];
    var long = o.xs.length >= 300;
    o.lines.forEach(function (l, i) {
      // Dots where a line has few values: a lone value (a stream's one
      // connect) draws no line.
      var n = (l.values || []).filter(function (v) { return v !== null; }).length;
      var colour = l.colour || palette[i % palette.length];
      // A dashed line costs much more to draw than a plain one: a long
      // run's secondary lines (errors/s, p50, p95) are drawn fainter
      // instead, and thinner, which keeps a 1-hour report quick to open.
      var dash = l.dash;
      if (long && dash) {
        colour += dash[0] <= 2 ? "55" : "99";
        dash = undefined;
      }
      series.push({ label: l.label, stroke: colour, width: long ? 1 : 2, dash: dash,
        scale: l.right ? "right" : "y", spanGaps: !!l.span, points: { show: n < 60, size: n <= 2 ? 10 : 5 } });
      data.push(l.values);
    });
    var axes = [{ label: o.xLabel }, { label: o.unit }];
    var scales = { x: { time: false } };
    if (o.unit2) {
      axes.push({ label: o.unit2, scale: "right", side: 1, grid: { show: false } });
      scales.right = {};
    }
    var width = Math.max(400, Math.min(1100, (parent.clientWidth || 1000) - 10));
    new uPlot({
      title: o.title, width: width, height: 240, scales: scales, axes: axes, series: series,
      hooks: { draw: o.draw ? [o.draw] : [] }
    }, data, div);
    drawn++;
  }

  // capacity draws capacity searches' curves against the load of each
  // step: achieved requests/s and successful requests/s on the left axis,
  // p95 on the right, and each search's saturation point as a purple
  // vertical line. runs is [{label, capacity, dash}]: the comparison page
  // overlays two searches, the base one dashed.
  function capacity(parent, title, runs) {
    var xs = [];
    runs.forEach(function (r) {
      r.capacity.steps.forEach(function (st) { if (xs.indexOf(st.load) < 0) xs.push(st.load); });
    });
    xs.sort(function (a, b) { return a - b; });
    var lines = [];
    runs.forEach(function (r) {
      var at = {};
      r.capacity.steps.forEach(function (st) { at[st.load] = st; });
      // A run has no value at the other run's loads: its line spans them.
      function pick(f) { return xs.map(function (x) { return at[x] ? at[x][f] : null; }); }
      lines.push({ label: r.label + "requests/s", values: pick("rps"), colour: palette[0], dash: r.dash, span: true });
      lines.push({ label: r.label + "successful requests/s", values: pick("ok_rps"), colour: palette[2], dash: r.dash, span: true });
      lines.push({ label: r.label + "p95 ms", values: pick("p95_ms"), colour: palette[3], dash: r.dash, span: true, right: true });
    });
    chart(parent, { title: title, xs: xs, xLabel: "load (" + runs[0].capacity.unit + ")", unit: "requests/s",
      unit2: "p95 ms", lines: lines, draw: function (u) {
        runs.forEach(function (r) {
          if (r.capacity.saturation.step > 0) vline(u, r.capacity.saturation.load, "#7b3294", r.dash);
        });
      } });
  }

  // done tells the tests (and a reader of the DOM) how many charts the
  // page drew.
  function done() { document.body.setAttribute("data-charts", String(drawn)); }

  return { palette: palette, vline: vline, chart: chart, capacity: capacity, done: done };
})();
