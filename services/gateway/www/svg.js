/*
 * svg.js - the dashboard's drawings, made by the page as SVG: a line chart
 * of a run's values, a bar of objects by phase, and a Workflow's DAG.
 * Each function returns a new element from plain data and keeps no state,
 * so a page draws again by replacing the old element. Colours come from
 * style.css through the phase classes (ph-Running, ...).
 */
'use strict';

function phaseClass(p) { return 'ph-' + (p || 'none'); }

function fmtNum(v) {
  if (!isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);
  return String(Math.round(v * 1000) / 1000);
}

/* A line chart of points [[x, y], ...] in x order, titled. */
function lineChart(title, pts) {
  const W = 320, H = 150, L = 44, R = 8, T = 22, B = 20;
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (const [x, y] of pts) {
    x0 = Math.min(x0, x); x1 = Math.max(x1, x);
    y0 = Math.min(y0, y); y1 = Math.max(y1, y);
  }
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  if (y0 === y1) { y0 -= 1; y1 += 1; }
  const X = x => L + (x - x0) / (x1 - x0) * (W - L - R);
  const Y = y => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  const line = pts.map(([x, y]) => X(x).toFixed(1) + ',' + Y(y).toFixed(1)).join(' ');
  const last = pts[pts.length - 1];
  return s('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img',
                    'aria-label': title, 'data-series': title,
                    'data-points': pts.length },
    s('text', { x: 4, y: 14, class: 'title' }, title + '  ' + fmtNum(last[1])),
    s('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, class: 'axis' }),
    s('line', { x1: L, y1: T, x2: L, y2: H - B, class: 'axis' }),
    s('text', { x: L - 4, y: T + 4, class: 'tick end' }, fmtNum(y1)),
    s('text', { x: L - 4, y: H - B, class: 'tick end' }, fmtNum(y0)),
    s('text', { x: L, y: H - 4, class: 'tick' }, fmtNum(x0)),
    s('text', { x: W - R, y: H - 4, class: 'tick end' }, fmtNum(x1)),
    s('polyline', { points: line, class: 'series' }),
    s('circle', { cx: X(last[0]), cy: Y(last[1]), r: 2.5, class: 'dot' }));
}

/* A bar of counts by phase ({Running: 2, ...}), with its legend. */
function phaseBar(counts) {
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const bar = s('svg', { class: 'phasebar', viewBox: '0 0 300 12',
                         preserveAspectRatio: 'none' });
  let x = 0;
  for (const [p, n] of Object.entries(counts).sort()) {
    const w = total ? n / total * 300 : 0;
    bar.append(s('rect', { x, y: 0, width: w, height: 12, class: phaseClass(p) },
                 s('title', {}, p + ': ' + n)));
    x += w;
  }
  const legend = Object.entries(counts).sort().map(([p, n]) =>
      h('span', { class: 'phase ' + phaseClass(p) }, (p || 'none') + ' ' + n));
  return total ? h('div', { class: 'phases' }, bar, h('div', {}, legend)) : null;
}

/*
 * A DAG, left to right: nodes [{id, label, deps: [id], phase, href}], a
 * node's column its longest path from a root (a cycle or a missing
 * dependency is drawn as far as it goes, never looped on).
 */
function dagSvg(nodes) {
  const W = 170, H = 44, GX = 56, GY = 18, M = 10;
  const byId = new Map(nodes.map(n => [n.id, n]));
  const depth = new Map();
  const depthOf = (n, seen) => {
    if (depth.has(n.id)) return depth.get(n.id);
    if (seen.has(n.id)) return 0;
    seen.add(n.id);
    let d = 0;
    for (const id of n.deps || [])
      if (byId.has(id)) d = Math.max(d, depthOf(byId.get(id), seen) + 1);
    depth.set(n.id, d);
    return d;
  };
  const cols = [];
  for (const n of nodes) {
    const d = depthOf(n, new Set());
    (cols[d] = cols[d] || []).push(n);
  }
  const pos = new Map();
  cols.forEach((col, c) => col.forEach((n, r) =>
      pos.set(n.id, { x: M + c * (W + GX), y: M + r * (H + GY) })));
  const rows = Math.max(1, ...cols.map(c => c.length));
  const svg = s('svg', { class: 'dag', role: 'img', 'aria-label': 'workflow DAG',
                         width: M * 2 + cols.length * (W + GX) - GX,
                         height: M * 2 + rows * (H + GY) - GY },
    s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5,
                                markerWidth: 7, markerHeight: 7, orient: 'auto' },
                    s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }))));
  for (const n of nodes)
    for (const id of n.deps || []) {
      const a = pos.get(id), b = pos.get(n.id);
      if (!a) continue;
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2, mx = (x1 + x2) / 2;
      svg.append(s('path', { class: 'edge', 'marker-end': 'url(#arrow)',
                             d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}` }));
    }
  for (const n of nodes) {
    const p = pos.get(n.id);
    const g = s('g', { class: 'dagnode ' + phaseClass(n.phase), 'data-id': n.id,
                       'data-phase': n.phase || '' },
      s('rect', { x: p.x, y: p.y, width: W, height: H, rx: 6 }),
      s('text', { x: p.x + 8, y: p.y + 18, class: 'name' }, n.label),
      s('text', { x: p.x + 8, y: p.y + 35, class: 'ph' }, n.phase || 'waiting'),
      s('title', {}, n.title || n.label));
    svg.append(n.href ? s('a', { href: n.href }, g) : g);
  }
  return svg;
}
