// The report's charts, drawn with uPlot from a run's series (the summary
// export's "series"). hloadReport.draw is shared by the report, which
// draws once from the JSON embedded in it, and the live dashboard, which
// draws again at every interval; hloadReport.show is the report's own.
// Neither reads anything but what it is given: a report works offline
// from disk.
var hloadReport = (function () {
  "use strict";
  var palette = hloadCharts.palette;

  // draw draws the series s. where says where each part goes:
  // scenario(name) returns a scenario's element (or null to skip it),
  // protocol is the element of the protocol metrics and gauges (or null),
  // and cpu, when set, is the element of a chart of hload's own CPU.
  function draw(s, where) {
    // marks draws the stage boundaries (grey, dashed) and the warnings said
    // during the run (red for the generator self-check, orange otherwise).
    function marks(stages) {
      return function (u) {
        (stages || []).forEach(function (t) { hloadCharts.vline(u, t, "#888", [6, 4]); });
        (s.events || []).forEach(function (e) {
          // The self-check's live warning starts with these words: see
          // liveWarning in core/generator.go.
          hloadCharts.vline(u, e.time_s, e.text.indexOf("hload is saturated") === 0 ? "#d00" : "#f90");
        });
      };
    }

    function chart(parent, title, unit, lines, stages) {
      hloadCharts.chart(parent, { title: title, xs: s.time_s, xLabel: "seconds since start", unit: unit,
        lines: lines, draw: marks(stages) });
    }

    (s.scenarios || []).forEach(function (sc) {
      var parent = where.scenario(sc.name);
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
    var proto = where.protocol;
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

    // hload's own CPU, a fraction of the cores it may use, shown in %.
    if (where.cpu && s.generator_cpu && s.generator_cpu.length) {
      chart(where.cpu, "hload's own CPU", "% of its cores", [{ label: "hload CPU %",
        values: s.generator_cpu.map(function (v) { return v === null ? null : Math.round(1000 * v) / 10; }) }], []);
    }
  }

  // show draws the report from the JSON embedded in the page.
  function show() {
    var sum = JSON.parse(document.getElementById("hload-data").textContent);
    var s = sum.series;

    // The capacity searches' curves come from the summary, not the series:
    // they are drawn even for an export without series.
    Object.keys(sum.scenarios || {}).sort().forEach(function (name) {
      var c = (sum.scenarios[name] || {}).capacity;
      var parent = document.querySelector('.capacity-chart[data-scenario="' + CSS.escape(name) + '"]');
      if (c && parent) hloadCharts.capacity(parent, "capacity search: throughput and p95 by load", [{ label: "", capacity: c }]);
    });

    if (s && s.time_s && s.time_s.length > 0) {
      draw(s, {
        scenario: function (name) { return document.querySelector('.charts[data-scenario="' + CSS.escape(name) + '"]'); },
        protocol: document.getElementById("protocol-charts")
      });
    }
    hloadCharts.done();
  }

  return { draw: draw, show: show };
})();
