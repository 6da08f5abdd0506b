// Draws the comparison's charts: both runs' series overlaid, per scenario,
// the base run dashed and the new one solid, each from its own start; and
// the capacity searches both runs ran.
(function () {
  "use strict";
  var d = JSON.parse(document.getElementById("hload-data").textContent);
  var C = hloadCharts;
  var baseDash = [6, 4];

  function scenarioOf(series, name) {
    return ((series && series.scenarios) || []).filter(function (sc) { return sc.name === name; })[0];
  }

  // column aligns a request's column of one run on xs, the two runs'
  // times together: null where the run has no point.
  function column(series, sc, request, field, xs) {
    var r = sc && (sc.requests || []).filter(function (r) { return r.name === request; })[0];
    if (!r || !r[field]) return null;
    var at = {};
    series.time_s.forEach(function (t, i) { at[t] = r[field][i]; });
    return xs.map(function (x) { return x in at ? at[x] : null; });
  }

  document.querySelectorAll(".charts[data-scenario]").forEach(function (parent) {
    var name = parent.getAttribute("data-scenario");
    var runs = [{ label: "base", series: d.base.series, dash: baseDash }, { label: "new", series: d.new.series }];
    var xs = [], requests = [];
    runs.forEach(function (run) {
      run.sc = scenarioOf(run.series, name);
      if (!run.sc || !run.series.time_s) return;
      run.series.time_s.forEach(function (t) { if (xs.indexOf(t) < 0) xs.push(t); });
      (run.sc.requests || []).forEach(function (r) { if (requests.indexOf(r.name) < 0) requests.push(r.name); });
    });
    if (xs.length === 0) return;
    xs.sort(function (a, b) { return a - b; });
    requests.sort();
    [["requests/s", "rps", "per second"], ["latency p95", "latency_p95_ms", "ms"]].forEach(function (what) {
      var lines = [];
      requests.forEach(function (request, i) {
        runs.forEach(function (run) {
          var values = column(run.series, run.sc, request, what[1], xs);
          if (values) lines.push({ label: run.label + " " + request, values: values, dash: run.dash,
            colour: C.palette[i % C.palette.length], span: true });
        });
      });
      C.chart(parent, { title: what[0], xs: xs, xLabel: "seconds since each run's start", unit: what[2], lines: lines });
    });
  });

  document.querySelectorAll(".capacity-chart[data-scenario]").forEach(function (parent) {
    var name = parent.getAttribute("data-scenario");
    C.capacity(parent, "capacity search: throughput and p95 by load", [
      { label: "base ", capacity: d.base.capacity[name], dash: baseDash },
      { label: "new ", capacity: d.new.capacity[name] }]);
  });
  C.done();
})();
