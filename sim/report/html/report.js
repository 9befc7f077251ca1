// llmsim HTML report: draws the result document (docs/output-schema.md) that the page embeds as
// <script id="llmsim-document">, with Chart.js (Debian libjs-chart.js, inlined beside this script).
// The charts read only the document, the same record the JSON and CSV printers write.
//
// For tests (tests/cli/check_html.sh): when done, <body> carries data-charts-expected, data-charts-drawn
// (charts whose canvas holds drawn pixels), data-errors (script errors and console.error calls) and
// data-status ("ok" when every chart drew and nothing failed).
(function () {
  'use strict';

  const state = { expected: 0, drawn: 0, errors: [] };
  function publish() {
    const b = document.body;
    b.dataset.chartsExpected = String(state.expected);
    b.dataset.chartsDrawn = String(state.drawn);
    b.dataset.errors = String(state.errors.length);
    b.dataset.status = state.errors.length === 0 && state.drawn === state.expected ? 'ok' : 'failed';
    let s = document.getElementById('llmsim-status');
    if (!s) {
      s = document.createElement('pre');
      s.id = 'llmsim-status';
      s.hidden = true;
      b.appendChild(s);
    }
    s.textContent = JSON.stringify(state);
  }
  window.addEventListener('error', function (e) {
    state.errors.push('error: ' + (e && e.message ? e.message : String(e)));
    publish();
  });
  const consoleError = console.error.bind(console);
  console.error = function () {
    const args = Array.prototype.slice.call(arguments);
    state.errors.push('console.error: ' + args.map(String).join(' '));
    publish();
    consoleError.apply(null, args);
  };

  // Okabe & Ito's palette: told apart under the common colour-vision deficiencies.
  const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', '#56B4E9', '#F0E442', '#000000'];
  const colour = (i) => PALETTE[i % PALETTE.length];
  // Point shapes, so that a series is told apart without colour too.
  const SHAPES = ['circle', 'triangle', 'rect', 'rectRot', 'crossRot', 'star', 'rectRounded', 'cross'];
  const shape = (i) => SHAPES[i % SHAPES.length];

  const GiB = 1024 * 1024 * 1024;

  // ---- values --------------------------------------------------------------------------------------
  const isFigure = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && 'value' in v && 'unit' in v;
  const isScalar = (v) => v === null || ['string', 'number', 'boolean'].includes(typeof v);
  const finite = (v) => typeof v === 'number' && isFinite(v);

  function fmtNumber(v) {
    if (!finite(v)) return String(v);
    const a = Math.abs(v);
    if (a !== 0 && (a >= 1e7 || a < 1e-3)) return v.toExponential(3);
    const digits = a >= 1000 ? 0 : a >= 100 ? 1 : a >= 10 ? 2 : 3;
    return v.toLocaleString('en-US', { maximumFractionDigits: digits });
  }
  // How a unit is shown: bytes in GiB, seconds in s or ms, fractions in %.
  function displayUnit(unit, magnitude) {
    if (unit === 'B') return magnitude >= 0.1 * GiB ? { f: 1 / GiB, u: 'GiB' } : { f: 1 / (1024 * 1024), u: 'MiB' };
    if (unit === 's') return magnitude < 1 ? { f: 1000, u: 'ms' } : { f: 1, u: 's' };
    if (unit === 'fraction') return { f: 100, u: '%' };
    return { f: 1, u: unit };
  }
  function fmtFigure(fig) {
    const d = displayUnit(fig.unit, Math.abs(fig.value));
    let s = fmtNumber(fig.value * d.f) + (d.u ? ' ' + d.u : '');
    if (finite(fig.low) && finite(fig.high)) s += ' [' + fmtNumber(fig.low * d.f) + ', ' + fmtNumber(fig.high * d.f) + ']';
    return s;
  }
  function fmtValue(v) {
    if (isFigure(v)) return fmtFigure(v);
    if (v === null || v === undefined) return '';
    if (typeof v === 'number') return fmtNumber(v);
    if (typeof v === 'boolean') return v ? 'yes' : 'no';
    if (Array.isArray(v)) return v.every(isScalar) ? v.map(fmtValue).join(', ') : JSON.stringify(v);
    if (typeof v === 'object') {
      return Object.keys(v).map((k) => k + ' ' + fmtValue(v[k])).join('; ');
    }
    return String(v);
  }
  const title = (key) => key.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase());

  // ---- DOM -----------------------------------------------------------------------------------------
  function el(tag, attrs, children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else e.setAttribute(k, v);
    }
    for (const c of children || []) if (c) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    return e;
  }
  const root = document.getElementById('report');
  function section(name) {
    const s = el('section', {}, [el('h2', { text: name })]);
    root.appendChild(s);
    return s;
  }
  function chartRow(parent) {
    const row = el('div', { class: 'charts' });
    parent.appendChild(row);
    return row;
  }

  // A table of objects (one row each); `columns` defaults to the keys of the rows in first-seen order.
  function table(parent, rows, options) {
    const opts = options || {};
    const limit = opts.limit || 200;
    const columns = opts.columns || [];
    if (!opts.columns) for (const r of rows) for (const k of Object.keys(r)) if (!columns.includes(k)) columns.push(k);
    const t = el('table', {}, [el('thead', {}, [el('tr', {}, columns.map((c) => el('th', { text: c })))])]);
    const body = el('tbody');
    for (const r of rows.slice(0, limit)) {
      body.appendChild(el('tr', {}, columns.map((c) => {
        const v = r[c];
        return el('td', { class: typeof v === 'number' || isFigure(v) ? 'num' : '', text: fmtValue(v) });
      })));
    }
    t.appendChild(body);
    parent.appendChild(t);
    if (rows.length > limit) parent.appendChild(el('p', { class: 'more', text: (rows.length - limit) + ' more rows in the JSON or CSV output' }));
    return t;
  }
  function keyValueTable(parent, obj, keys) {
    const rows = keys.filter((k) => k in obj).map((k) => ({ name: k, value: obj[k] }));
    if (rows.length) table(parent, rows, { columns: ['name', 'value'] });
  }

  // ---- charts --------------------------------------------------------------------------------------
  // Whether the canvas holds drawn pixels: a chart that failed to draw leaves it blank.
  function drewPixels(canvas) {
    const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 3; i < px.length; i += 4) if (px[i] !== 0) return true;
    return false;
  }
  function chart(parent, heading, caption, config, size) {
    state.expected += 1;
    const w = (size && size.width) || 560;
    const h = (size && size.height) || 320;
    const canvas = el('canvas', { width: String(w), height: String(h), role: 'img', 'aria-label': heading });
    parent.appendChild(el('figure', { class: 'chart' }, [canvas, caption ? el('figcaption', { text: caption }) : null]));
    const options = config.options || (config.options = {});
    options.animation = false;
    options.responsive = false;
    options.plugins = Object.assign({ title: { display: true, text: heading, font: { size: 14 } } }, options.plugins || {});
    try {
      const ch = new Chart(canvas, config);
      // Drawn: the canvas holds pixels and at least one data point sits at a finite place on it (axes
      // alone, around no data, do not count).
      let points = 0;
      ch.data.datasets.forEach((ds, i) => {
        points += ch.getDatasetMeta(i).data.filter((e) => finite(e.x) && finite(e.y)).length;
      });
      if (points > 0 && drewPixels(canvas)) state.drawn += 1;
      else state.errors.push('chart drew no data: ' + heading);
    } catch (e) {
      state.errors.push('chart failed: ' + heading + ': ' + e.message);
    }
  }
  // Tick labels of a logarithmic axis: the powers of ten only.
  const decades = { callback: (v) => (Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9 ? fmtNumber(v) : '') };
  function axis(titleText, extra) {
    return Object.assign({ title: { display: true, text: titleText } }, extra || {});
  }
  // One bar per named quantity in the unit suited to the largest.
  function barChart(parent, heading, caption, names, values, unit, options) {
    const o = options || {};
    const d = displayUnit(unit, Math.max.apply(null, values.map(Math.abs).concat([0])));
    chart(parent, heading, caption, {
      type: 'bar',
      data: { labels: names, datasets: [{ label: heading, data: values.map((v) => v * d.f), backgroundColor: names.map((_, i) => colour(o.oneColour ? 0 : i)) }] },
      options: {
        indexAxis: o.horizontal ? 'y' : 'x',
        plugins: { legend: { display: false } },
        scales: o.horizontal
          ? { x: axis(o.valueTitle ? o.valueTitle + ' (' + d.u + ')' : d.u), y: { ticks: { autoSkip: false } } }
          : { y: axis(o.valueTitle ? o.valueTitle + ' (' + d.u + ')' : d.u), x: { ticks: { autoSkip: false } } },
      },
    }, o.size || (o.horizontal ? { width: 540, height: Math.max(220, 70 + 24 * names.length) } : undefined));
  }
  // Figures with bands as floating bars (low to high) and the prediction as a point.
  function bandChart(parent, heading, caption, names, figs) {
    const unit = figs[0].unit;
    const d = displayUnit(unit, Math.max.apply(null, figs.map((f) => Math.abs(f.value))));
    chart(parent, heading, caption, {
      type: 'bar',
      data: {
        labels: names,
        datasets: [
          { type: 'line', label: 'prediction', data: figs.map((f) => f.value * d.f), showLine: false, pointRadius: 6, pointStyle: 'rectRot', backgroundColor: colour(3), borderColor: colour(3) },
          { label: 'band (low to high)', data: figs.map((f) => [(finite(f.low) ? f.low : f.value) * d.f, (finite(f.high) ? f.high : f.value) * d.f]), backgroundColor: 'rgba(0,114,178,0.35)', borderColor: colour(0), borderWidth: 1 },
        ],
      },
      options: { scales: { y: axis(d.u, { beginAtZero: true }) } },
    });
  }

  // ---- the header ----------------------------------------------------------------------------------
  function header(doc) {
    let h = 'llmsim ' + doc.command;
    if (doc.model) h += ': ' + doc.model;
    if (doc.system) h += ' on ' + doc.system;
    root.appendChild(el('h1', { text: h }));
    // The answer first (report::add_verdict): whether it fits, serves within the SLOs, found a plan.
    if (doc.verdict && typeof doc.verdict.text === 'string') {
      root.appendChild(el('p', { class: 'verdict ' + (doc.verdict.ok ? 'ok' : 'bad'), text: doc.verdict.text }));
    }
    if (doc.run_summary) root.appendChild(el('p', { class: 'summary', text: doc.run_summary }));
    if (Array.isArray(doc.problems) && doc.problems.length) {
      root.appendChild(el('div', { class: 'problems' }, [el('strong', { text: 'Problems: ' }), doc.problems.join('; ')]));
    }
    if (doc.run && typeof doc.run === 'object') {
      const defaulted = new Set(doc.defaulted || []);
      const d = el('details', {}, [el('summary', { text: 'Every setting of the run (' + defaulted.size + ' defaulted, in italics)' })]);
      const t = el('table', {}, [el('thead', {}, [el('tr', {}, [el('th', { text: 'setting' }), el('th', { text: 'value' })])])]);
      const body = el('tbody');
      for (const k of Object.keys(doc.run)) {
        const cls = defaulted.has(k) ? 'defaulted' : '';
        body.appendChild(el('tr', {}, [el('td', { class: cls, text: k }), el('td', { class: cls, text: fmtValue(doc.run[k]) })]));
      }
      t.appendChild(body);
      d.appendChild(t);
      root.appendChild(d);
    }
  }

  // Top-level figures and scalars of the document as one table.
  const HEADER_KEYS = new Set(['schema_version', 'command', 'model', 'system', 'run', 'defaulted', 'run_summary', 'valid', 'problems', 'verdict']);
  function figuresTable(doc, shown) {
    const keys = Object.keys(doc).filter((k) => !HEADER_KEYS.has(k) && !shown.has(k) && (isFigure(doc[k]) || isScalar(doc[k])));
    if (!keys.length) return;
    const s = section('Figures');
    keyValueTable(s, doc, keys);
    keys.forEach((k) => shown.add(k));
  }
  // What no command-specific part showed: tables for arrays of objects, key/value tables for objects.
  function rest(doc, shown) {
    for (const k of Object.keys(doc)) {
      if (HEADER_KEYS.has(k) || shown.has(k)) continue;
      const v = doc[k];
      if (Array.isArray(v)) {
        if (!v.length) continue;
        const s = section(title(k));
        if (v.every((r) => r !== null && typeof r === 'object' && !Array.isArray(r))) table(s, v);
        else s.appendChild(el('p', { text: v.map(fmtValue).join(', ') }));
      } else if (v !== null && typeof v === 'object' && !isFigure(v)) {
        const s = section(title(k));
        keyValueTable(s, v, Object.keys(v));
      }
      shown.add(k);
    }
  }

  // Root figures that carry a band, shown relative to their prediction (unit-free, one chart).
  function bandsOf(doc, keys) {
    return keys.filter((k) => isFigure(doc[k]) && finite(doc[k].low) && finite(doc[k].high) && doc[k].value > 0);
  }
  function relativeBands(parent, doc, keys, caption) {
    const ks = bandsOf(doc, keys);
    if (!ks.length) return;
    chart(parent, 'Bands around the prediction (1 = predicted)', caption, {
      type: 'bar',
      data: {
        labels: ks,
        datasets: [{ label: 'low / predicted to high / predicted', data: ks.map((k) => [doc[k].low / doc[k].value, doc[k].high / doc[k].value]), backgroundColor: 'rgba(0,114,178,0.35)', borderColor: colour(0), borderWidth: 1 }],
      },
      options: { indexAxis: 'y', plugins: { legend: { display: false } }, scales: { x: axis('ratio to the prediction') } },
    });
  }

  // ---- commands ------------------------------------------------------------------------------------
  const renderers = {};

  // The scheduled step as a Gantt chart: one row per stage and stream, one colour per phase.
  function gantt(parent, spans) {
    const rows = [];
    for (const sp of spans) {
      const label = 'stage ' + sp.stage + ' ' + sp.stream;
      if (!rows.includes(label)) rows.push(label);
    }
    const phases = [];
    for (const sp of spans) if (!phases.includes(sp.phase)) phases.push(sp.phase);
    const end = Math.max.apply(null, spans.map((sp) => sp.end_s));
    const d = displayUnit('s', end);
    chart(parent, 'Pipeline schedule of one step', 'Busy spans of each stage\u2019s streams (compute, tensor-parallel and pipeline communication, ...) by phase; gaps are idle time (the pipeline bubble, waits).', {
      type: 'bar',
      data: {
        labels: rows,
        datasets: phases.map((p, i) => ({
          label: p,
          data: spans.filter((sp) => sp.phase === p).map((sp) => ({ x: [sp.start_s * d.f, sp.end_s * d.f], y: 'stage ' + sp.stage + ' ' + sp.stream })),
          backgroundColor: colour(i), borderColor: colour(i), borderWidth: 0, barPercentage: 0.8, categoryPercentage: 1,
        })),
      },
      options: {
        indexAxis: 'y',
        grouped: false,
        scales: { x: axis('time in the step (' + d.u + ')', { min: 0, max: end * d.f }), y: { ticks: { autoSkip: false } } },
      },
    }, { width: 1120, height: Math.max(200, 70 + 34 * rows.length) });
  }

  renderers.train = function (doc, shown) {
    const s = section('Where the step time goes');
    const row = chartRow(s);
    for (const [key, label] of [['by_phase', 'phase'], ['by_module', 'module'], ['by_op_class', 'operator class']]) {
      const items = (doc[key] || []).filter((r) => isFigure(r.seconds));
      if (!items.length) continue;
      barChart(row, 'Step time by ' + label, 'Seconds of the critical stage\u2019s step per ' + label + ' (the table below lists the shares).',
        items.map((r) => r.name), items.map((r) => r.seconds.value), 's', { horizontal: true, valueTitle: 'time per step' });
    }
    relativeBands(row, doc, ['step_time_s', 'tokens_per_s', 'samples_per_s', 'mfu', 'hfu', 'model_tflops_per_gpu'],
      'The band is the spread measured runs of this regime showed around predictions (docs/validation.md).');
    if (Array.isArray(doc.schedule) && doc.schedule.length) gantt(section('The scheduled step'), doc.schedule);
    if (doc.memory && isFigure(doc.memory.gpu_bytes)) {
      const m = doc.memory;
      const ms = section('Memory');
      const mrow = chartRow(ms);
      const cap = isFigure(m.gpu_capacity_bytes) ? m.gpu_capacity_bytes.value : null;
      const items = (m.items || []).filter((r) => isFigure(r.bytes) && r.bytes.value > 0);
      if (items.length) breakdownChart(mrow, items, cap);
      const names = ['peak per GPU'];
      const vals = [m.gpu_bytes.value];
      if (isFigure(m.timeline_peak_bytes)) { names.push('step timeline peak'); vals.push(m.timeline_peak_bytes.value); }
      if (isFigure(m.host_bytes) && m.host_bytes.value > 0) { names.push('host (offload)'); vals.push(m.host_bytes.value); }
      memoryAgainstCapacity(mrow, 'The memory model\u2019s peak and the schedule\u2019s', names, vals, cap,
        'The peak of the memory model and the peak with activations held as the schedule holds them.');
      const MT = Array.isArray(doc.memory_timeline) ? doc.memory_timeline : [];
      if (MT.length) {
        const end = Math.max(isFigure(doc.step_time_s) ? doc.step_time_s.value : 0, MT[MT.length - 1].time_s);
        const d = displayUnit('s', end);
        const pts = MT.map((p) => ({ x: p.time_s * d.f, y: p.gpu_bytes / GiB }));
        pts.push({ x: end * d.f, y: MT[MT.length - 1].gpu_bytes / GiB });
        const datasets = [{ label: 'stage ' + MT[0].stage, data: pts, stepped: 'before', borderColor: colour(0), backgroundColor: 'rgba(0,114,178,0.2)', fill: true, pointRadius: 0, borderWidth: 2 }];
        if (cap) datasets.push({ label: 'capacity', data: [{ x: 0, y: cap / GiB }, { x: end * d.f, y: cap / GiB }], borderColor: colour(3), borderDash: [6, 4], pointRadius: 0, fill: false });
        chart(mrow, 'Memory of the peak stage over the step', 'Weights, gradients, optimizer states and buffers, plus the activations of the micro-batches in flight as the schedule holds them.', {
          type: 'line',
          data: { datasets: datasets },
          options: { scales: { x: axis('time in the step (' + d.u + ')', { type: 'linear', min: 0, max: end * d.f }), y: axis('GiB per GPU', { beginAtZero: true }) } },
        }, { width: 1120, height: 300 });
      }
      if (m.items) table(ms, m.items, { columns: ['name', 'bytes', 'note'] });
      keyValueTable(ms, m, ['gpu_bytes', 'gpu_capacity_bytes', 'host_bytes', 'timeline_peak_bytes', 'peak_in_flight_micro_batches']);
    }
    ['by_phase', 'by_module', 'by_op_class'].forEach((k) => {
      if (doc[k]) { table(s, doc[k], { columns: ['name', 'seconds', 'fraction'] }); shown.add(k); }
    });
    ['memory', 'schedule', 'memory_timeline'].forEach((k) => shown.add(k));
  };

  function memoryAgainstCapacity(parent, heading, names, bytes, capacity, caption) {
    const datasets = [{ label: 'GiB', data: bytes.map((b) => b / GiB), backgroundColor: names.map((_, i) => colour(i)) }];
    if (capacity) datasets.push({ type: 'line', label: 'capacity ' + fmtNumber(capacity / GiB) + ' GiB', data: names.map(() => capacity / GiB), borderColor: colour(3), borderDash: [6, 4], pointRadius: 0, fill: false });
    chart(parent, heading, caption, { type: 'bar', data: { labels: names, datasets: datasets }, options: { scales: { y: axis('GiB per GPU', { beginAtZero: true }) } } });
  }

  // The parts of the per-GPU peak as one stacked bar, against the GPU's capacity.
  function breakdownChart(parent, items, capacity) {
    chart(parent, 'What the peak GPU holds', 'Each part of the per-GPU peak; the marker at the right is the GPU\u2019s capacity.', {
      type: 'bar',
      data: {
        labels: ['peak GPU'],
        datasets: items.map((r, i) => ({ label: r.name, data: [r.bytes.value / GiB], backgroundColor: colour(i) }))
          .concat(capacity ? [{ type: 'line', label: 'capacity ' + fmtNumber(capacity / GiB) + ' GiB', data: [capacity / GiB], borderColor: colour(3), backgroundColor: colour(3), pointStyle: 'line', pointRadius: 40, borderWidth: 3 }] : []),
      },
      options: { scales: { x: { stacked: true }, y: axis('GiB per GPU', { stacked: true, beginAtZero: true }) } },
    });
  }

  renderers.memory = function (doc, shown) {
    const s = section('Memory per GPU');
    const row = chartRow(s);
    const g = doc.gpu || {};
    const items = (g.items || []).filter((r) => isFigure(r.bytes) && r.bytes.value > 0);
    const cap = isFigure(g.capacity_bytes) ? g.capacity_bytes.value : null;
    if (items.length) breakdownChart(row, items, cap);
    const sug = (doc.suggestions || []).filter((r) => isFigure(r.gpu_bytes));
    if (isFigure(g.total_bytes)) {
      memoryAgainstCapacity(row, 'What each suggested change does', ['as given'].concat(sug.map((r) => r.change)),
        [g.total_bytes.value].concat(sug.map((r) => r.gpu_bytes.value)), cap, 'Per-GPU peak with each change the memory model suggests, one at a time.');
    }
    if (g.items) table(s, g.items, { columns: ['name', 'bytes', 'note'] });
    if (doc.host && doc.host.items && doc.host.items.length) {
      const h = section('Host memory');
      table(h, doc.host.items, { columns: ['name', 'bytes', 'note'] });
      keyValueTable(h, doc.host, ['total_bytes', 'capacity_bytes']);
    }
    keyValueTable(s, g, ['total_bytes', 'capacity_bytes', 'peak_stage']);
    if (sug.length) table(s, doc.suggestions);
    ['gpu', 'host', 'suggestions'].forEach((k) => shown.add(k));
  };

  renderers.infer = function (doc, shown) {
    const s = section('Latency and throughput');
    const row = chartRow(s);
    const lat = ['ttft_s', 'tpot_s', 'e2e_s'].filter((k) => isFigure(doc[k]));
    if (lat.length) {
      bandChart(row, 'Latency with its band', 'TTFT: time to the first token; TPOT: time per output token; e2e: the whole request.',
        lat.map((k) => k.replace(/_s$/, '')), lat.map((k) => doc[k]));
    }
    const it = doc.iteration || {};
    const parts = ['gemm_s', 'attention_s', 'communication_s', 'host_wait_s', 'other_s'];
    const phases = Object.keys(it).filter((p) => it[p] && parts.some((k) => isFigure(it[p][k])));
    if (phases.length) {
      chart(row, 'One iteration by kind of work', 'Prefill: the prompt\u2019s forward pass; decode: one generated token of the batch.', {
        type: 'bar',
        data: {
          labels: phases,
          datasets: parts.map((k, i) => ({ label: k.replace(/_s$/, '').replace(/_/g, ' '), data: phases.map((p) => (isFigure(it[p][k]) ? it[p][k].value * 1000 : 0)), backgroundColor: colour(i) })),
        },
        options: { scales: { x: { stacked: true }, y: axis('ms per iteration', { stacked: true, beginAtZero: true }) } },
      });
      for (const p of phases) {
        const sub = el('div', {}, [el('h3', { text: 'Iteration: ' + p })]);
        s.appendChild(sub);
        keyValueTable(sub, it[p], Object.keys(it[p]));
      }
      shown.add('iteration');
    }
  };

  renderers.serve = function (doc, shown) {
    const s = section('Latency');
    const row = chartRow(s);
    const L = doc.latency_s || {};
    const Q = Array.isArray(doc.latency_quantiles) ? doc.latency_quantiles : [];
    const points = [['p50', 0.5], ['p90', 0.9], ['p99', 0.99], ['max', 1]];
    // A metric's distribution: every request's quantile when the document has them (--timeline, --html),
    // else the points of it the summary gives.
    function series(m) {
      const key = m + '_s';
      if (Q.length && Q.some((r) => finite(r[key]))) return Q.filter((r) => finite(r[key])).map((r) => ({ x: r[key] * 1000, y: r.quantile * 100 }));
      if (!L[m]) return [];
      return points.filter(([p]) => isFigure(L[m][p])).map(([p, q]) => ({ x: L[m][p].value * 1000, y: q * 100 }));
    }
    function cdf(heading, metrics, caption) {
      const ms = metrics.filter((m) => series(m).length);
      if (!ms.length) return;
      chart(row, heading, caption, {
        type: 'line',
        data: {
          datasets: ms.map((m, i) => ({
            label: m, data: series(m), borderColor: colour(i), backgroundColor: colour(i), pointStyle: shape(i),
            pointRadius: series(m).length > 10 ? 0 : 5, borderWidth: 2,
          })),
        },
        options: { scales: { x: axis('latency (ms)', { type: 'linear', beginAtZero: true }), y: axis('requests at or below (%)', { min: 0, max: 100 }) } },
      });
    }
    const note = Q.length
      ? 'The distribution over every request the simulation served (quantiles 0-100 %); ITL from its p50, p90, p99 and max.'
      : 'Points of the distribution the simulation reports (p50, p90, p99, max) over the requests it served.';
    cdf('TTFT, queueing and end-to-end latency', ['ttft', 'queue', 'e2e'], note);
    cdf('Time per output token and inter-token latency', ['tpot', 'itl'], note);
    const fr = ['kv_utilization', 'kv_peak_utilization', 'busy_fraction'].filter((k) => isFigure(doc[k]));
    if (fr.length) barChart(row, 'KV cache and GPU use', 'Mean and peak share of the KV-cache blocks in use, and the share of time an iteration ran.', fr, fr.map((k) => doc[k].value), 'fraction', { valueTitle: 'share' });
    if (doc.goodput && isFigure(doc.goodput.fraction)) {
      barChart(row, 'Goodput against the SLOs', 'Share of the requests within every SLO given (' + fmtFigure(doc.goodput.requests_per_s) + ' of such requests).',
        ['within the SLOs', 'missing them'], [doc.goodput.fraction.value, 1 - doc.goodput.fraction.value], 'fraction', { valueTitle: 'share of requests' });
    }
    const T = Array.isArray(doc.timeline) ? doc.timeline : [];
    if (T.length) {
      const ts = section('Over time');
      const trow = chartRow(ts);
      const end = T[T.length - 1].end_s;
      const d = displayUnit('s', end);
      const mid = (r) => ((r.start_s + r.end_s) / 2) * d.f;
      const line = (label, key, i, scale) => ({ label: label, data: T.map((r) => ({ x: mid(r), y: r[key] * (scale || 1) })), borderColor: colour(i), backgroundColor: colour(i), pointRadius: 0, borderWidth: 2, stepped: 'middle' });
      chart(trow, 'Batch and queue over time', 'Mean sequences per iteration, and requests waiting or running at each moment (' + T.length + ' slices of the run).', {
        type: 'line',
        data: { datasets: [line('batch (sequences per iteration)', 'batch', 0), line('running requests', 'running', 1), line('waiting requests', 'waiting', 3)] },
        options: { scales: { x: axis('time (' + d.u + ')', { type: 'linear', min: 0, max: end * d.f }), y: axis('sequences / requests', { beginAtZero: true }) } },
      });
      chart(trow, 'KV-cache use over time', 'Share of a replica\u2019s KV-cache capacity held by the iterations of each slice.', {
        type: 'line',
        data: { datasets: [line('KV cache in use', 'kv_utilization', 2, 100)] },
        options: { scales: { x: axis('time (' + d.u + ')', { type: 'linear', min: 0, max: end * d.f }), y: axis('KV cache in use (%)', { min: 0, max: 100 }) } },
      });
    }
    for (const m of Object.keys(L)) {
      const sub = el('div', {}, [el('h3', { text: 'Latency: ' + m })]);
      s.appendChild(sub);
      keyValueTable(sub, L[m], Object.keys(L[m]));
    }
    ['latency_s', 'latency_quantiles', 'timeline', 'goodput'].forEach((k) => shown.add(k));
    if (doc.goodput) { const g = section('Goodput'); keyValueTable(g, doc.goodput, Object.keys(doc.goodput)); }
  };

  // The configurations of a search: memory against throughput, the Pareto front apart.
  function configScatter(parent, heading, groups, caption) {
    const datasets = groups.filter((g) => g.rows.length).map((g, i) => ({
      label: g.label,
      data: g.rows.map((r) => {
        const m = (r.full && isFigure(r.full.gpu_bytes)) ? r.full.gpu_bytes : r.fast && r.fast.gpu_bytes;
        const t = (r.full && isFigure(r.full.tokens_per_s)) ? r.full.tokens_per_s : r.fast && r.fast.tokens_per_s;
        return m && t ? { x: m.value / GiB, y: t.value, label: r.run_summary || '' } : null;
      }).filter(Boolean),
      backgroundColor: colour(i), borderColor: colour(i), pointStyle: shape(i), pointRadius: 6,
    }));
    chart(parent, heading, caption, {
      type: 'scatter',
      data: { datasets: datasets },
      options: {
        plugins: { tooltip: { callbacks: { label: (c) => c.raw.label + ': ' + fmtNumber(c.raw.y) + ' tokens/s, ' + fmtNumber(c.raw.x) + ' GiB' } } },
        scales: { x: axis('memory per GPU (GiB)'), y: axis('tokens/s (whole job)') },
      },
    });
  }
  function prunedChart(parent, pruned) {
    const rows = (pruned || []).filter((r) => r.count > 0).sort((a, b) => b.count - a.count);
    if (!rows.length) return;
    chart(parent, 'Why configurations were pruned', 'Configurations the search set aside, by rule (log scale); the table gives an example of each.', {
      type: 'bar',
      data: { labels: rows.map((r) => r.reason.length > 48 ? r.reason.slice(0, 47) + '\u2026' : r.reason), datasets: [{ label: 'configurations', data: rows.map((r) => r.count), backgroundColor: colour(1) }] },
      options: { indexAxis: 'y', plugins: { legend: { display: false } }, scales: { x: axis('configurations', { type: 'logarithmic', ticks: decades }), y: { ticks: { autoSkip: false } } } },
    }, { width: 760, height: Math.max(220, 40 + 26 * rows.length) });
  }
  function configTable(parent, rows) {
    table(parent, rows.map((r) => Object.assign({ rank: r.rank, system: r.system }, r.config || {}, {
      step_time_s: r.full ? r.full.step_time_s : r.fast && r.fast.step_time_s,
      tokens_per_s: r.full ? r.full.tokens_per_s : r.fast && r.fast.tokens_per_s,
      gpu_bytes: r.full ? r.full.gpu_bytes : r.fast && r.fast.gpu_bytes,
      mfu: r.full && r.full.mfu,
    })));
  }

  renderers['search train'] = function (doc, shown) {
    const s = section('Configurations');
    const row = chartRow(s);
    const top = doc.top || [];
    const paretoIdx = new Set((doc.pareto || []).map((r) => r.index));
    configScatter(row, 'Throughput against memory', [
      { label: 'Pareto front', rows: doc.pareto || [] },
      { label: 'top (not on the front)', rows: top.filter((r) => !paretoIdx.has(r.index)) },
    ], 'Each point a configuration the step simulator ran; the Pareto front trades memory for throughput.');
    prunedChart(row, doc.pruned);
    if (top.length) { s.appendChild(el('h3', { text: 'Top configurations side by side' })); configTable(s, top); }
    if ((doc.pareto || []).length) { s.appendChild(el('h3', { text: 'Pareto front' })); configTable(s, doc.pareto); }
    if (doc.pruned) { s.appendChild(el('h3', { text: 'Pruned' })); table(s, doc.pruned); }
    ['top', 'pareto', 'pruned'].forEach((k) => shown.add(k));
  };

  renderers['plan train'] = function (doc, shown) {
    const s = section('The plan');
    const row = chartRow(s);
    const best = doc.best && doc.best.config ? [doc.best] : [];
    configScatter(row, 'Throughput against memory', [
      { label: 'best', rows: best },
      { label: 'alternatives', rows: doc.alternatives || [] },
    ], 'The cheapest configuration that meets the deadline and the alternatives the planner kept.');
    prunedChart(row, doc.pruned);
    if (best.length) { s.appendChild(el('h3', { text: 'Best and alternatives' })); configTable(s, best.concat(doc.alternatives || [])); }
    if (doc.pruned) { s.appendChild(el('h3', { text: 'Pruned' })); table(s, doc.pruned); }
    ['best', 'alternatives', 'pruned'].forEach((k) => shown.add(k));
  };

  renderers['plan serve'] = function (doc, shown) {
    const s = section('Candidates');
    const row = chartRow(s);
    const c = doc.candidates || [];
    const costly = c.some((r) => r.cost_per_hour > 0);
    const xOf = (r) => (costly ? r.cost_per_hour : r.gpus);
    const groups = [
      ['Pareto front', (r) => r.feasible && r.pareto],
      ['meets the SLOs', (r) => r.feasible && !r.pareto],
      ['misses them', (r) => !r.feasible],
    ];
    chart(row, 'Throughput against ' + (costly ? 'cost' : 'GPUs'), 'Each point a serving configuration the simulator ran at the asked rate.', {
      type: 'scatter',
      data: {
        datasets: groups.map(([label, pick], i) => ({
          label: label,
          data: c.filter(pick).filter((r) => isFigure(r.output_tokens_per_s)).map((r) => ({ x: xOf(r), y: r.output_tokens_per_s.value, label: r.system + ' ' + r.engine + ' tp ' + r.tp + ' pp ' + r.pp + ' x' + r.replicas })),
          backgroundColor: colour(i), borderColor: colour(i), pointStyle: shape(i), pointRadius: 6,
        })),
      },
      options: {
        plugins: { tooltip: { callbacks: { label: (ctx) => ctx.raw.label + ': ' + fmtNumber(ctx.raw.y) + ' tokens/s' } } },
        scales: { x: axis(costly ? 'cost per hour' : 'GPUs'), y: axis('output tokens/s', { beginAtZero: true }) },
      },
    });
    table(s, c);
    shown.add('candidates');
  };

  renderers.validate = function (doc, shown) {
    const rows = (doc.rows || []).filter((r) => finite(r.measured) && finite(r.predicted) && r.measured > 0 && r.predicted > 0 && r.metric !== 'fits');
    const s = section('Measured against predicted');
    const row = chartRow(s);
    // Vertical segments from each row's low to high at its measured value.
    const bandPlugin = {
      id: 'bands',
      afterDatasetsDraw(ch) {
        const ctx = ch.ctx;
        const xs = ch.scales.x;
        const ys = ch.scales.y;
        ch.data.datasets.forEach((ds, i) => {
          if (!ch.isDatasetVisible(i) || !ds.bands) return;
          ctx.save();
          ctx.strokeStyle = ds.borderColor;
          ctx.globalAlpha = 0.35;
          ds.data.forEach((p) => {
            if (!finite(p.low) || !finite(p.high) || p.low <= 0) return;
            ctx.beginPath();
            ctx.moveTo(xs.getPixelForValue(p.x), ys.getPixelForValue(p.low));
            ctx.lineTo(xs.getPixelForValue(p.x), ys.getPixelForValue(p.high));
            ctx.stroke();
          });
          ctx.restore();
        });
      },
    };
    // One series per value of `key`; with `most`, the `most` values with the most rows and one series of
    // the rest (a palette tells only so many apart).
    function scatterBy(key, heading, most) {
      const counts = new Map();
      for (const r of rows) counts.set(r[key], (counts.get(r[key]) || 0) + 1);
      let cats = Array.from(counts.keys());
      const other = 'other (' + Math.max(0, cats.length - (most || cats.length)) + ')';
      const cat = (r) => (!most || cats.includes(r[key]) ? r[key] : other);
      if (most && cats.length > most) {
        cats = cats.sort((a, b) => counts.get(b) - counts.get(a)).slice(0, most);
        cats.push(other);
      }
      const lo = Math.min.apply(null, rows.map((r) => Math.min(r.measured, r.predicted)));
      const hi = Math.max.apply(null, rows.map((r) => Math.max(r.measured, r.predicted)));
      const datasets = cats.map((c, i) => ({
        label: String(c) || '(none)',
        bands: true,
        data: rows.filter((r) => cat(r) === c).map((r) => ({ x: r.measured, y: r.predicted, low: r.low, high: r.high, id: r.run_id + ' ' + r.metric + ' (' + r.source + ')' })),
        backgroundColor: c === other ? '#999999' : colour(i), borderColor: c === other ? '#999999' : colour(i),
        pointStyle: shape(i), pointRadius: 3,
      }));
      datasets.push({ type: 'line', label: 'predicted = measured', data: [{ x: lo, y: lo }, { x: hi, y: hi }], borderColor: '#888', borderDash: [4, 4], pointRadius: 0, bands: false });
      chart(row, heading, 'Each row of the files on log axes in its own unit (seconds, tokens/s, GiB, ...); a vertical stroke is the row\u2019s band.', {
        type: 'scatter',
        data: { datasets: datasets },
        options: {
          plugins: { tooltip: { callbacks: { label: (c) => (c.raw.id || '') + ': measured ' + fmtNumber(c.raw.x) + ', predicted ' + fmtNumber(c.raw.y) } } },
          scales: { x: axis('measured', { type: 'logarithmic', ticks: decades }), y: axis('predicted', { type: 'logarithmic', ticks: decades }) },
        },
        plugins: [bandPlugin],
      }, { width: 540, height: 460 });
    }
    if (rows.length) {
      scatterBy('workload', 'Measured against predicted, by workload');
      scatterBy('framework', 'Measured against predicted, by framework (the 7 with the most rows)', 7);
      scatterBy('source', 'Measured against predicted, by source (the 7 with the most rows)', 7);
      const edges = [];
      for (let e = -100; e <= 200; e += 10) edges.push(e);
      const counts = edges.slice(0, -1).map(() => 0);
      for (const r of rows) {
        if (!finite(r.error_pct)) continue;
        const e = Math.max(-100, Math.min(199.999, r.error_pct));
        counts[Math.floor((e + 100) / 10)] += 1;
      }
      chart(row, 'Error distribution', 'Rows by (predicted - measured) / measured, in bins of 10 %; errors beyond +200 % fall in the last bin.', {
        type: 'bar',
        data: { labels: edges.slice(0, -1).map((e) => e + '..' + (e + 10)), datasets: [{ label: 'rows', data: counts, backgroundColor: colour(0) }] },
        options: { plugins: { legend: { display: false } }, scales: { x: axis('error (%)'), y: axis('rows', { beginAtZero: true }) } },
      }, { width: 760, height: 300 });
      const worst = rows.filter((r) => finite(r.error_pct)).sort((a, b) => Math.abs(b.error_pct) - Math.abs(a.error_pct)).slice(0, 20);
      s.appendChild(el('h3', { text: 'The worst rows' }));
      table(s, worst, { columns: ['run_id', 'metric', 'measured', 'predicted', 'error_pct', 'low', 'high', 'framework', 'system', 'source'] });
    }
    const sum = doc.summary || {};
    for (const k of Object.keys(sum)) {
      const v = sum[k];
      const t = section('Summary ' + k.replace(/_/g, ' '));
      const list = Array.isArray(v) ? v : [v];
      table(t, list.map((r) => {
        const o = Object.assign({}, r);
        delete o.worst;
        return o;
      }));
    }
    const all = section('Every row');
    const d = el('details', {}, [el('summary', { text: (doc.rows || []).length + ' rows' })]);
    all.appendChild(d);
    table(d, doc.rows || [], { columns: ['file', 'line', 'run_id', 'metric', 'measured', 'predicted', 'low', 'high', 'error_pct', 'status', 'workload', 'framework', 'system', 'source', 'note'], limit: 5000 });
    ['rows', 'summary'].forEach((k) => shown.add(k));
  };

  // ---- main ----------------------------------------------------------------------------------------
  try {
    const doc = JSON.parse(document.getElementById('llmsim-document').textContent);
    const shown = new Set();
    if (typeof Chart === 'undefined') throw new Error('Chart.js is missing from this page');
    Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
    header(doc);
    const render = renderers[doc.command];
    if (render) render(doc, shown);
    figuresTable(doc, shown);
    rest(doc, shown);
    root.appendChild(el('footer', { text: 'llmsim result document, schema_version ' + doc.schema_version + ' (docs/output-schema.md); the same record as --json and --csv. Charts: Chart.js ' + Chart.version + '.' }));
  } catch (e) {
    state.errors.push('report failed: ' + e.message);
    root.appendChild(el('p', { class: 'problems', text: 'The report could not be drawn: ' + e.message }));
  }
  publish();
})();
