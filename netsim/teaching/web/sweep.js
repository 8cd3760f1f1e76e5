/* The size sweep: time against bytes per device on log axes, the closed form as a line, simulated points,
   the latency- and bandwidth-bound regimes and their crossover. Data: netsim.teaching.web_sweep.sweep. */
(function (global) {
  'use strict';
  var P = global.NetsimPlayer, el = P.el;
  var COLOURS = ['#0078b4', '#d22d00'];
  function draw(svg, series, current) {
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var W = 640, H = 300, L = 70, R = 20, T = 20, B = 44;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    var xs = [], ys = [];
    series.forEach(function (s) {
      s.data.points.forEach(function (p) { xs.push(p.bytes); ys.push(p.time_s); });
      s.data.line.forEach(function (p) { xs.push(p[0]); ys.push(p[1]); });
    });
    var x0 = Math.log10(1024), x1 = Math.log10(Math.pow(2, 30)), y0 = Math.floor(Math.log10(Math.min.apply(null, ys))), y1 = Math.ceil(Math.log10(Math.max.apply(null, ys)));
    if (y1 <= y0) { y1 = y0 + 1; }
    function X(b) { return L + (Math.log10(b) - x0) / (x1 - x0) * (W - L - R); }
    function Y(t) { return H - B - (Math.log10(t) - y0) / (y1 - y0) * (H - T - B); }
    var first = series[0].data;
    if (first.crossover_bytes && first.crossover_bytes > 1024 && first.crossover_bytes < Math.pow(2, 30)) {
      var cx = X(first.crossover_bytes);
      el('rect', {x: L, y: T, width: cx - L, height: H - T - B, 'class': 'latency-region'}, svg);
      el('rect', {x: cx, y: T, width: W - R - cx, height: H - T - B, 'class': 'bandwidth-region'}, svg);
      el('line', {x1: cx, x2: cx, y1: T, y2: H - B, 'class': 'crossover'}, svg);
      el('text', {x: cx + 4, y: (T + H - B) / 2, 'class': 'note'}, svg, 'terms equal at ' + P.bytes(first.crossover_bytes));
      el('text', {x: L + 8, y: T + 16 + 14 * series.length + 8, 'class': 'note'}, svg, 'latency-bound');
      el('text', {x: W - R - 4, y: H - B - 6, 'class': 'note end'}, svg, 'bandwidth-bound');
    }
    el('rect', {x: L, y: T, width: W - L - R, height: H - T - B, 'class': 'frame'}, svg);
    for (var e = 10; e <= 30; e += 4) {
      var x = X(Math.pow(2, e));
      el('line', {x1: x, x2: x, y1: H - B, y2: H - B + 4, 'class': 'tick'}, svg);
      el('text', {x: x, y: H - B + 16, 'class': 'ticklabel'}, svg, P.bytes(Math.pow(2, e)));
    }
    for (var d = y0; d <= y1; d++) {
      var y = Y(Math.pow(10, d));
      el('line', {x1: L - 4, x2: L, y1: y, y2: y, 'class': 'tick'}, svg);
      el('text', {x: L - 6, y: y + 4, 'class': 'ticklabel end'}, svg, P.seconds(Math.pow(10, d)));
    }
    el('text', {x: (L + W - R) / 2, y: H - 8, 'class': 'axistitle'}, svg, 'bytes per device');
    series.forEach(function (s, i) {
      var colour = COLOURS[i % COLOURS.length];
      if (s.data.line.length) {
        el('path', {d: s.data.line.map(function (p, k) { return (k ? 'L' : 'M') + X(p[0]).toFixed(1) + ',' + Y(p[1]).toFixed(1); }).join(' '), stroke: colour, 'class': 'formline'}, svg);
      }
      s.data.points.forEach(function (p) {
        var dot = el('circle', {cx: X(p.bytes), cy: Y(p.time_s), r: 4, fill: colour, 'class': 'point'}, svg);
        el('title', {}, dot, s.label + ': ' + P.bytes(p.bytes) + ' simulated ' + P.seconds(p.time_s) + (p.estimate_s ? ', closed form ' + P.seconds(p.estimate_s) : ''));
      });
      el('text', {x: L + 8, y: T + 16 + 14 * i, fill: colour, 'class': 'legend'}, svg, s.label + ': line = closed form (' + s.data.kind + '), dots = simulated');
    });
    if (current) {
      el('line', {x1: X(current), x2: X(current), y1: T, y2: H - B, 'class': 'current'}, svg);
      el('text', {x: X(current) - 4, y: T + (H - T - B) * 0.75, 'class': 'note end'}, svg, 'this run: ' + P.bytes(current));
    }
  }
  global.NetsimSweep = {draw: draw};
})(window);
