/* netsim's browser player: draws a run from its events (SVG), on a clock with play/pause/step/scrub/speed.
   Data: netsim.teaching.events.player_data. No network, no library. */
(function (global) {
  'use strict';
  var SVG = 'http://www.w3.org/2000/svg';

  function el(tag, attrs, parent, text) {
    var node = document.createElementNS(SVG, tag);
    for (var k in attrs) { node.setAttribute(k, attrs[k]); }
    if (text !== undefined) { node.textContent = text; }
    if (parent) { parent.appendChild(node); }
    return node;
  }
  function h(tag, cls, parent, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined) { node.textContent = text; }
    if (parent) { parent.appendChild(node); }
    return node;
  }
  function seconds(t) {
    var a = Math.abs(t);
    if (a === 0) { return '0 s'; }
    if (a >= 1) { return +t.toPrecision(6) + ' s'; }
    if (a >= 1e-3) { return +(t * 1e3).toPrecision(6) + ' ms'; }
    if (a >= 1e-6) { return +(t * 1e6).toPrecision(6) + ' us'; }
    return +(t * 1e9).toPrecision(6) + ' ns';
  }
  function bytes(b) {
    var units = ['B', 'KiB', 'MiB', 'GiB'], i = 0;
    while (b >= 1024 && i < 3) { b /= 1024; i += 1; }
    return +b.toPrecision(4) + ' ' + units[i];
  }
  function upperBound(sorted, t) {  // index of the first value > t
    var lo = 0, hi = sorted.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (sorted[mid] <= t) { lo = mid + 1; } else { hi = mid; } }
    return lo;
  }
  function bezier(p, f) {  // p = [sx, sy, cx, cy, ex, ey]
    var g = 1 - f;
    return [g * g * p[0] + 2 * g * f * p[2] + f * f * p[4], g * g * p[1] + 2 * g * f * p[3] + f * f * p[5]];
  }
  function stepAt(data, t) {  // the earliest step with a chunk still on the move (or still to leave)
    var steps = data.steps;
    for (var k = 0; k < steps.length; k++) { if (steps[k].end > t || (t === 0 && steps[k].end >= t)) { return k; } }
    return -1;
  }

  /* ---- the devices view: boxes of slots, links, chunks in flight ---- */
  function DevicesView(svg, data) {
    var x0 = data.extent[0], x1 = data.extent[1], y0 = data.extent[2], y1 = data.extent[3], pad = 0.2;
    svg.setAttribute('viewBox', [x0 - pad, -(y1 + pad), x1 - x0 + 2 * pad, y1 - y0 + 2 * pad].join(' '));
    var defs = el('defs', {}, svg);
    ['idle', 'busy'].forEach(function (kind) {
      var m = el('marker', {id: svg.id + '-' + kind, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 5, markerHeight: 5, orient: 'auto-start-reverse'}, defs);
      el('path', {d: 'M0,0 L10,5 L0,10 z', 'class': 'arrow-' + kind}, m);
    });
    this.data = data;
    this.links = data.links.map(function (l) {
      var p = [l[2], -l[3], l[4], -l[5], l[6], -l[7]];
      var path = el('path', {d: 'M' + p[0] + ',' + p[1] + ' Q' + p[2] + ',' + p[3] + ' ' + p[4] + ',' + p[5], 'class': 'link', 'marker-end': 'url(#' + svg.id + '-idle)'}, svg);
      return {p: p, path: path, latency: l[8]};
    });
    var w = data.box[0], hh = data.box[1], cols = data.cols, pieces = data.pieces;
    var rows = Math.max(1, Math.ceil(data.blocks / cols));
    var cell = Math.min((2 * w - 0.04) / cols, (2 * hh - 0.13) / rows);
    var self = this;
    this.slots = {};
    data.devices.forEach(function (d) {
      var id = d[0], cx = d[1], cy = -d[2];
      var g = el('g', {'class': 'device', 'data-device': id}, svg);
      el('rect', {x: cx - w, y: cy - hh, width: 2 * w, height: 2 * hh, rx: 0.03, 'class': 'box'}, g);
      el('text', {x: cx, y: cy - hh + 0.085, 'class': 'dlabel'}, g, 'device ' + id);
      var left = cx - cols * cell / 2, top = cy - hh + 0.11, mine = [];
      for (var b = 0; b < data.blocks; b++) {
        var r = Math.floor(b / cols), c = b % cols;
        for (var q = 0; q < pieces; q++) {
          var rect = el('rect', {x: left + c * cell + 0.006 + q * (cell - 0.012) / pieces, y: top + r * cell + 0.006, width: (cell - 0.012) / pieces, height: cell - 0.012, 'class': 'slot'}, g);
          mine.push(rect);
        }
        mine['label' + b] = el('text', {x: left + c * cell + cell / 2, y: top + r * cell + cell / 2 + cell * 0.18, 'class': 'slabel', 'font-size': cell * 0.5}, g, '');
      }
      self.slots[id] = mine;
    });
    this.chunks = el('g', {'class': 'chunks'}, svg);
    this.chunkSize = Math.min(0.09, cell * 0.8);
    this.firstHop = {};  // per transfer: its first hop, to draw a chunk waiting at its sender
    for (var k = 0; k < data.hops.start.length; k++) {
      var i = data.hops.transfer[k];
      if (!(i in this.firstHop) || data.hops.start[k] < data.hops.start[this.firstHop[i]]) { this.firstHop[i] = k; }
    }
    this.state = null; this.applied = 0;
  }
  DevicesView.prototype.cells = function (t) {
    var d = this.data, times = d.changes.time, upto = upperBound(times, t);
    if (this.state === null || upto < this.applied) {
      this.state = {};
      for (var dev = 0; dev < d.start.length; dev++) {
        for (var i = 0; i < d.start[dev].length; i++) { var s = d.start[dev][i]; this.state[dev + ':' + s[0]] = [s[1], s[2], s[3]]; }
      }
      this.applied = 0;
    }
    for (var k = this.applied; k < upto; k++) { var c = d.changes.cell[k]; this.state[c[0] + ':' + c[1]] = [c[2], c[3], c[4]]; }
    this.applied = upto;
    return this.state;
  };
  DevicesView.prototype.colour = function (colour, count) {
    var rgb = this.data.palette[colour % this.data.palette.length];
    var shade = this.data.reducing ? count / this.data.group_size : 1;
    return {fill: rgb, opacity: (0.18 + 0.82 * Math.min(1, shade)).toFixed(3)};
  };
  DevicesView.prototype.draw = function (t) {
    var d = this.data, state = this.cells(t), self = this;
    d.devices.forEach(function (dev) {
      var id = dev[0], rects = self.slots[id], labels = {};
      for (var i = 0; i < d.blocks * d.pieces; i++) {
        var cell = state[id + ':' + i], rect = rects[i];
        if (!cell) { rect.setAttribute('fill', '#ffffff'); rect.setAttribute('fill-opacity', '1'); continue; }
        var c = self.colour(cell[0], cell[1]);
        rect.setAttribute('fill', c.fill); rect.setAttribute('fill-opacity', c.opacity);
        var b = Math.floor(i / d.pieces);
        labels[b] = d.reducing ? String(cell[1]) : (cell[2] >= 0 ? String(cell[2]) : '+');
      }
      for (var b2 = 0; b2 < d.blocks; b2++) { rects['label' + b2].textContent = labels[b2] || ''; }
    });
    var busy = {}, hops = d.hops, tr = d.transfers, shown = [];
    for (var k = 0; k < hops.start.length && t < d.time_s; k++) {  // (times are rounded: nothing moves once the run is done)
      var link = this.links[hops.link[k]], end = hops.end[k] + link.latency;
      if (hops.start[k] <= t && t < end) {
        busy[hops.link[k]] = true;
        var f = end > hops.start[k] ? (t - hops.start[k]) / (end - hops.start[k]) : 1;
        shown.push([bezier(link.p, f), tr.colour[hops.transfer[k]], tr.count[hops.transfer[k]], false]);
      } else if (this.firstHop[hops.transfer[k]] === k && tr.sent[hops.transfer[k]] <= t && t < hops.start[k]) {
        shown.push([bezier(link.p, 0), tr.colour[hops.transfer[k]], tr.count[hops.transfer[k]], true]);  // waiting for its link
      }
    }
    this.links.forEach(function (l, i) {
      var on = !!busy[i];
      l.path.setAttribute('class', on ? 'link busy' : 'link');
      l.path.setAttribute('marker-end', 'url(#' + l.path.ownerSVGElement.id + (on ? '-busy)' : '-idle)'));
    });
    while (this.chunks.firstChild) { this.chunks.removeChild(this.chunks.firstChild); }
    var s = this.chunkSize;
    shown.forEach(function (c) {
      var col = self.colour(c[1], c[2]);
      el('rect', {x: c[0][0] - s / 2, y: c[0][1] - s / 2, width: s, height: s, fill: c[3] ? '#ffffff' : col.fill, stroke: c[3] ? col.fill : '#000', 'class': c[3] ? 'chunk waiting' : 'chunk'}, self.chunks);
    });
    return shown.length;
  };

  /* ---- the axes view (big runs): a row per axis and direction, representative devices ---- */
  function AxesView(svg, data) {
    this.data = data;
    var rows = data.rows, reps = data.representatives, W = 100, rowH = 6, top = 4;
    var height = top + (rows.length + reps.length + 1) * (rowH + 2) + 6;
    svg.setAttribute('viewBox', '0 0 ' + (W + 30) + ' ' + height);
    el('text', {x: 0, y: 3, 'class': 'axhead'}, svg, 'links busy, by axis and direction (darker = more of them)');
    var self = this;
    rows.forEach(function (row, i) {
      var y = top + i * (rowH + 2);
      el('text', {x: 0, y: y + rowH * 0.7, 'class': 'axlabel'}, svg, row.label);
      row.share.forEach(function (s, b) {
        el('rect', {x: 24 + b * W / data.bins, y: y, width: W / data.bins + 0.05, height: rowH, fill: '#1f4e79', 'fill-opacity': Math.min(1, s).toFixed(3)}, svg);
      });
    });
    var y0 = top + rows.length * (rowH + 2) + 4;
    el('text', {x: 0, y: y0 - 0.5, 'class': 'axhead'}, svg, 'representative devices: share of their incoming pieces arrived');
    this.bars = reps.map(function (rep, i) {
      var y = y0 + 1 + i * (rowH + 2);
      el('text', {x: 0, y: y + rowH * 0.7, 'class': 'axlabel'}, svg, 'device ' + rep.device);
      el('rect', {x: 24, y: y, width: W, height: rowH, 'class': 'box'}, svg);
      var bar = el('rect', {x: 24, y: y, width: 0, height: rowH, fill: data.palette[i % data.palette.length]}, svg);
      el('text', {x: 24 + W + 1, y: y + rowH * 0.7, 'class': 'axnote'}, svg, rep.why);
      return bar;
    });
    this.head = el('line', {x1: 24, x2: 24, y1: top - 1, y2: height - 2, 'class': 'playhead'}, svg);
    this.W = W;
  }
  AxesView.prototype.draw = function (t) {
    var d = this.data, f = d.time_s > 0 ? Math.min(1, t / d.time_s) : 1, W = this.W;
    this.head.setAttribute('x1', 24 + f * W); this.head.setAttribute('x2', 24 + f * W);
    d.representatives.forEach(function (rep, i) {
      var share = rep.arrivals.length ? upperBound(rep.arrivals, t) / rep.arrivals.length : 1;
      this.bars[i].setAttribute('width', (share * W).toFixed(3));
    }, this);
    return 0;
  };

  /* ---- one run: its drawing and its numbers ---- */
  var count = 0;
  function RunView(parent, data, label) {
    this.data = data;
    var box = h('div', 'run', parent);
    box.setAttribute('data-run', label || 'A');
    h('h3', 'runtitle', box, (label ? label + ': ' : '') + data.title);
    var svg = el('svg', {id: 'nsp-svg-' + (count++), 'class': 'drawing', role: 'img', 'aria-label': data.title}, box);
    this.view = data.view === 'axes' ? new AxesView(svg, data) : new DevicesView(svg, data);
    var facts = h('dl', 'facts', box), s = data.summary, self = this;
    function row(name, value, role) { h('dt', '', facts, name); var dd = h('dd', '', facts, value); if (role) { dd.setAttribute('data-role', role); } return dd; }
    this.clock = row('time', '', 'clock');
    row('simulated', s.simulated, 'simulated');
    row('closed form', s.formula, 'formula');
    row('kind', s.kind + (s.terms ? ' (' + s.terms + ')' : ''), 'kind');
    row('why', s.why || '', 'why');
    if (s.regime) { row('regime', s.regime + (s.crossover_bytes ? '; the terms are equal at ' + bytes(s.crossover_bytes) + ' per device' : ''), 'regime'); }
    this.caption = row('this step', '', 'caption');
    this.box = box;
    if (data.palette && data.group_size > 1 && data.view !== 'axes') {
      var key = h('div', 'key', box, 'colour = ' + (data.reducing ? 'the member a block\'s sum goes to (paler: fewer shares added; number: shares summed)' : 'the member a block came from (number: its device)') + '; squares on links: chunks in flight (hollow: waiting for a link): ');
      for (var i = 0; i < Math.min(data.group_size, 32); i++) { var sw = h('span', 'swatch', key, String(i)); sw.style.background = data.palette[i % data.palette.length]; }
    }
    void self;
  }
  RunView.prototype.show = function (t) {
    var d = this.data, here = Math.min(t, d.time_s);
    var moving = this.view.draw(here);
    this.clock.textContent = 't = ' + seconds(here) + ' of ' + seconds(d.time_s);
    var k = stepAt(d, here);
    this.caption.textContent = k < 0 || here >= d.time_s ? 'done: ' + d.steps.length + ' step' + (d.steps.length === 1 ? '' : 's') + ' in ' + d.summary.simulated : d.steps[k].caption;
    this.box.setAttribute('data-step', k < 0 || here >= d.time_s ? 'done' : String(k + 1));
    this.box.setAttribute('data-moving', String(moving));
  };

  /* ---- the clock and its controls, shared by the runs shown (compare: the same clock) ---- */
  function Player(root, runs, labels) {
    this.root = root; root.classList.add('nsp'); root.tabIndex = 0;
    while (root.firstChild) { root.removeChild(root.firstChild); }
    var bar = h('div', 'bar', root), self = this;
    function button(role, text, tip, act) { var b = h('button', '', bar, text); b.type = 'button'; b.title = tip; b.setAttribute('data-role', role); b.addEventListener('click', act); return b; }
    button('first', '|\u25c0', 'start (Home)', function () { self.stop(); self.seek(0); });
    button('prevstep', '\u25c0\u25c0 step', 'previous algorithm step ([)', function () { self.toStep(-1); });
    button('prev', '\u25c0', 'back a little (\u2190)', function () { self.stop(); self.seek(self.t - self.T / 100); });
    this.playButton = button('play', '\u25b6 play', 'play / pause (space)', function () { if (self.timer) { self.stop(); } else { self.start(); } });
    button('next', '\u25b6', 'forward a little (\u2192)', function () { self.stop(); self.seek(self.t + self.T / 100); });
    button('nextstep', 'step \u25b6\u25b6', 'next algorithm step (])', function () { self.toStep(1); });
    button('last', '\u25b6|', 'end (End)', function () { self.stop(); self.seek(self.T); });
    this.speed = h('select', '', bar); this.speed.setAttribute('data-role', 'speed'); this.speed.title = 'speed';
    ['0.25', '0.5', '1', '2', '4'].forEach(function (v) { var o = h('option', '', self.speed, v + '\u00d7'); o.value = v; if (v === '1') { o.selected = true; } });
    this.slider = h('input', '', bar); this.slider.type = 'range'; this.slider.min = 0; this.slider.max = 1000; this.slider.value = 0;
    this.slider.setAttribute('data-role', 'slider'); this.slider.setAttribute('aria-label', 'simulated time');
    this.slider.addEventListener('input', function () { self.stop(); self.seek(self.T * self.slider.value / 1000); });
    var area = h('div', runs.length > 1 ? 'runs two' : 'runs', root);
    this.views = runs.map(function (data, i) { return new RunView(area, data, labels ? labels[i] : ''); });
    this.T = Math.max.apply(null, runs.map(function (d) { return d.time_s; })) || 1e-12;
    this.steps = [];
    runs.forEach(function (d) { d.steps.forEach(function (s) { self.steps.push(s.start, s.end); }); });
    this.steps.push(0, this.T);
    this.steps = this.steps.filter(function (v, i, a) { return a.indexOf(v) === i; }).sort(function (a, b) { return a - b; });
    root.addEventListener('keydown', function (e) {
      if (e.target && (e.target.tagName === 'SELECT' || e.target.tagName === 'INPUT') && e.key !== ' ') { return; }
      if (e.key === ' ') { e.preventDefault(); self.playButton.click(); }
      else if (e.key === 'ArrowRight') { e.preventDefault(); self.stop(); self.seek(self.t + self.T / 100); }
      else if (e.key === 'ArrowLeft') { e.preventDefault(); self.stop(); self.seek(self.t - self.T / 100); }
      else if (e.key === ']') { self.toStep(1); } else if (e.key === '[') { self.toStep(-1); }
      else if (e.key === 'Home') { self.stop(); self.seek(0); } else if (e.key === 'End') { self.stop(); self.seek(self.T); }
    });
    this.timer = null; this.seek(0);
  }
  Player.prototype.seek = function (t) {
    this.t = Math.max(0, Math.min(this.T, t));
    this.slider.value = Math.round(1000 * this.t / this.T);
    this.views.forEach(function (v) { v.show(this.t); }, this);
    this.root.setAttribute('data-time', String(this.t));
    this.root.setAttribute('data-at-end', String(this.t >= this.T));
  };
  Player.prototype.toStep = function (direction) {
    this.stop();
    var t = this.t, eps = this.T * 1e-9, s = this.steps, i;
    if (direction > 0) { for (i = 0; i < s.length; i++) { if (s[i] > t + eps) { this.seek(s[i]); return; } } this.seek(this.T); }
    else { for (i = s.length - 1; i >= 0; i--) { if (s[i] < t - eps) { this.seek(s[i]); return; } } this.seek(0); }
  };
  Player.prototype.start = function () {
    var self = this, last = null;
    if (this.t >= this.T) { this.seek(0); }
    this.playButton.textContent = '\u275a\u275a pause'; this.root.setAttribute('data-playing', 'true');
    function tick(now) {
      if (!self.timer) { return; }
      if (last !== null) { self.seek(self.t + (now - last) / 1000 * self.T / 8 * parseFloat(self.speed.value)); }  // 1x: the run in 8 s
      last = now;
      if (self.t >= self.T) { self.stop(); return; }
      self.timer = requestAnimationFrame(tick);
    }
    this.timer = requestAnimationFrame(tick);
  };
  Player.prototype.stop = function () {
    if (this.timer) { cancelAnimationFrame(this.timer); this.timer = null; }
    this.playButton.textContent = '\u25b6 play'; this.root.setAttribute('data-playing', 'false');
  };

  function start(root, data) { return new Player(root, [data]); }
  global.NetsimPlayer = {Player: Player, start: start, seconds: seconds, bytes: bytes, el: el, h: h};
})(window);
