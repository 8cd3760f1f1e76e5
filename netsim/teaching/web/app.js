/* The teaching page: two setups (the second for comparing), run on the server, played on one clock. */
(function () {
  'use strict';
  var P = window.NetsimPlayer, h = P.h, options = null;
  var status = document.getElementById('status'), errorBox = document.getElementById('error');

  function post(path, body) {
    return fetch(path, {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)})
      .then(function (r) { return r.json().then(function (j) { if (!r.ok) { throw new Error(j.error || ('HTTP ' + r.status)); } return j; }); });
  }
  function showError(message) { errorBox.textContent = message; errorBox.hidden = !message; }
  function field(form, labelText, node) {
    var label = h('label', 'field', form); h('span', '', label, labelText); label.appendChild(node); return node;
  }
  function select(values, name, chosen) {
    var s = document.createElement('select'); s.name = name;
    values.forEach(function (v) { var o = h('option', '', s, v); o.value = v; if (v === chosen) { o.selected = true; } });
    return s;
  }
  function axesOf(form) {
    var kind = form.elements.topology.value, dims;
    if (kind === 'ring') { return []; }
    if (kind === 'torus' || kind === 'mesh') { dims = form.elements.dims.value.split('x'); }
    else if (kind === 'tpu') { dims = form.elements.preset.value.split(':')[1].split('x'); }
    else { dims = form.elements.slices.value.split(':')[1].split('x').slice(0, -1); return ['dcn'].concat(['x', 'y', 'z'].slice(0, dims.length)); }
    return ['x', 'y', 'z'].slice(0, dims.length);
  }
  function params(form) {
    var e = form.elements, p = {topology: e.topology.value, op: e.op.value, bytes: Math.pow(2, parseInt(e.size.value, 10)), calibration: e.calibration.value};
    if (p.topology === 'ring') { p.n = parseInt(e.n.value, 10); }
    if (p.topology === 'torus' || p.topology === 'mesh') { p.dims = e.dims.value; }
    if (p.topology === 'tpu') { p.preset = e.preset.value; }
    if (p.topology === 'slices') { p.slices = e.slices.value; }
    if (e.algorithm.value) { p.algorithm = e.algorithm.value; }
    var axes = Array.prototype.filter.call(form.querySelectorAll('input[name=axis]'), function (c) { return c.checked; }).map(function (c) { return c.value; });
    if (p.topology !== 'ring') { p.axes = axes; }
    return p;
  }
  function build(form, preset) {
    var top = field(form, 'topology', select(options.topologies, 'topology', preset.topology));
    var n = field(form, 'devices on the ring', document.createElement('input')); n.name = 'n'; n.type = 'number'; n.min = 2; n.max = 64; n.value = preset.n || 8;
    var dims = field(form, 'axes (e.g. 4x4, 4x4x4)', document.createElement('input')); dims.name = 'dims'; dims.value = preset.dims || '4x4'; dims.size = 8;
    var tpu = field(form, 'TPU slice', select(options.presets, 'preset', preset.preset));
    var slices = field(form, 'slices over the DCN', select(options.slices, 'slices', preset.slices));
    field(form, 'collective', select(options.ops, 'op', preset.op || 'psum'));
    var alg = field(form, 'algorithm', select([''], 'algorithm', ''));
    var about = h('p', 'about', form); about.setAttribute('data-role', 'about');
    var size = field(form, 'bytes per device', document.createElement('input')); size.name = 'size'; size.type = 'range'; size.min = 10; size.max = 30; size.step = 1; size.value = preset.size || 16;
    var sizeLabel = h('output', 'sizelabel', size.parentNode);
    var axes = h('fieldset', 'axes', form); h('legend', '', axes, 'mesh axes to run over');
    field(form, 'link model', select(['nominal', 'calibrated'], 'calibration', 'nominal'));
    var descriptions = {};
    function visible() {
      var kind = top.value;
      n.parentNode.hidden = kind !== 'ring'; dims.parentNode.hidden = kind !== 'torus' && kind !== 'mesh';
      tpu.parentNode.hidden = kind !== 'tpu'; slices.parentNode.hidden = kind !== 'slices';
      sizeLabel.textContent = P.bytes(Math.pow(2, parseInt(size.value, 10)));
      while (axes.children.length > 1) { axes.removeChild(axes.lastChild); }
      var names = axesOf(form);
      axes.hidden = !names.length;
      names.forEach(function (a) {
        var l = h('label', 'axis', axes); var c = h('input', '', l); c.type = 'checkbox'; c.name = 'axis'; c.value = a;
        c.checked = !preset.axes || preset.axes.indexOf(a) >= 0; h('span', '', l, ' ' + a);
        c.addEventListener('change', refresh);
      });
    }
    function describe() { about.textContent = alg.value ? alg.value + ': ' + (descriptions[alg.value] || '') : about.getAttribute('data-default') || ''; }
    function refresh() {
      sizeLabel.textContent = P.bytes(Math.pow(2, parseInt(size.value, 10)));
      var p = params(form); delete p.algorithm;
      return post('/api/algorithms', p).then(function (r) {
        var keep = alg.value || preset.algorithm || '';
        while (alg.firstChild) { alg.removeChild(alg.firstChild); }
        var d = h('option', '', alg, 'default (' + r.default + ')'); d.value = '';
        descriptions = r.algorithms;
        Object.keys(r.algorithms).forEach(function (name) { var o = h('option', '', alg, name); o.value = name; o.title = r.algorithms[name]; if (name === keep) { o.selected = true; } });
        about.setAttribute('data-default', r.default + ' (default): ' + (r.algorithms[r.default] || ''));
        describe(); showError('');
      }).catch(function (e) { showError(e.message); });
    }
    [top, tpu, slices].forEach(function (s) { s.addEventListener('change', function () { visible(); refresh(); }); });
    [n, dims, form.elements.op].forEach(function (s) { s.addEventListener('change', refresh); });
    size.addEventListener('input', function () { sizeLabel.textContent = P.bytes(Math.pow(2, parseInt(size.value, 10))); });
    alg.addEventListener('change', describe);
    form.addEventListener('submit', function (e) { e.preventDefault(); });
    visible();
    return refresh();
  }
  var forms = [document.getElementById('setup-a'), document.getElementById('setup-b')], compare = document.getElementById('compare');
  function chosen() { return compare.checked ? forms : forms.slice(0, 1); }
  function busy(text) { status.textContent = text; document.body.setAttribute('data-busy', text ? 'true' : 'false'); }
  function run() {
    showError(''); busy('running\u2026');
    var started = performance.now();
    var asked = chosen().map(function (f) { return post('/api/run', params(f)); });
    return Promise.all(asked).then(function (runs) {
      new P.Player(document.getElementById('player'), runs, runs.length > 1 ? ['A', 'B'] : null);
      busy(''); status.textContent = 'ran in ' + Math.round(performance.now() - started) + ' ms';
      document.body.setAttribute('data-ran', String(runs.length));
    }).catch(function (e) { busy(''); showError(e.message); });
  }
  function sweep() {
    showError(''); busy('sweeping sizes\u2026');
    var fs = chosen();
    return Promise.all(fs.map(function (f) { return post('/api/sweep', params(f)); })).then(function (all) {
      document.getElementById('sweep-panel').hidden = false;
      window.NetsimSweep.draw(document.getElementById('sweep-chart'), all.map(function (d, i) { return {label: fs.length > 1 ? 'ABC'[i] : 'this setup', data: d}; }), params(fs[0]).bytes);
      busy(''); document.body.setAttribute('data-swept', 'true');
    }).catch(function (e) { busy(''); showError(e.message); });
  }
  document.getElementById('run').addEventListener('click', run);
  document.getElementById('sweep').addEventListener('click', sweep);
  compare.addEventListener('change', function () { forms[1].hidden = !compare.checked; });
  fetch('/api/options').then(function (r) { return r.json(); }).then(function (o) {
    options = o;
    return Promise.all([build(forms[0], {topology: 'torus', dims: '4x4', op: 'psum', size: 16}), build(forms[1], {topology: 'torus', dims: '4x4', op: 'psum', size: 16, algorithm: 'dimension_ordered'})]);
  }).then(function () { document.body.setAttribute('data-ready', 'true'); }).catch(function (e) { showError(e.message); });
})();
