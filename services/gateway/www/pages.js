/*
 * pages.js - the dashboard's pages, one function each, routed by hash:
 *   #/                 overview: services, nodes, jobs and workflows
 *   #/jobs/NAME        a Job: tasks, pods (where and why), its run's
 *                      values as charts, its logs
 *   #/workflows/NAME   a Workflow: its DAG, its Jobs
 *   #/audit            the event stream, filtered
 * Any of them with ?at=TIME shows that moment. A page builds its frame
 * once and redraws a section (through later()) when its data changes;
 * everything it opens ends with its ctx.
 */
'use strict';

function section(parent, title, id) {
  const body = h('div', { class: 'body', id });
  parent.append(h('section', {}, h('h2', { text: title }), body));
  return body;
}

/* A phase as a coloured badge; look: the phase whose colour it takes. */
function phase(p, id, look) {
  return h('span', { class: 'phase ' + phaseClass(look || p), id,
                     'data-phase': p || '' }, p || 'none');
}

/* cols: [[header, row => cell]]; a cell is text or a node. */
function table(cols, rows, empty) {
  if (!rows.length) return h('p', { class: 'muted', text: empty || 'none' });
  return h('table', {},
    h('thead', {}, h('tr', {}, cols.map(([t]) => h('th', { text: t })))),
    h('tbody', {}, rows.map(r => h('tr', {}, cols.map(([, f]) => h('td', {}, f(r)))))));
}

function sorted(c) {
  return [...c.items.values()].sort((a, b) =>
      a.metadata.name < b.metadata.name ? -1 : 1);
}

function countPhases(c, field) {
  const n = {};
  for (const o of c.items.values()) {
    const p = o[field || 'phase'] || '';
    n[p] = (n[p] || 0) + 1;
  }
  return n;
}

/* ------------------------------------------------------------ overview */

function services(ctx, box) {
  const draw = rows => fill(box, 
      state.at ? h('p', { class: 'muted', text: 'Now (status is not in the log):' }) : null,
      table([['Service', r => r.name],
             ['State', r => phase(r.state, null, r.state === 'up' ? 'Ready' : 'NotReady')],
             ['Applied', r => r.seq], ['Lag', r => r.lag],
             ['Refused', r => (r.stale || 0) + (r.rejected || 0)],
             ['Why', r => r.why || '']], rows || []));
  (async () => {
    do {
      draw(await api('/api/v1/status', null, ctx.signal));
      await sleep(2000, ctx.signal);
    } while (ctx.live && !ctx.signal.aborted);
  })().catch(ctx.fail);
}

function capacity(o) {
  const spec = (o.resource && o.resource.spec) || o.spec || {};
  return spec.capacity || o.capacity || {};
}

function nodeRows(c) {
  return table([
    ['Node', o => o.metadata.name],
    ['Status', o => phase(o.status)],
    ['CPU', o => (o.cpuUsed || '0') + ' / ' + (capacity(o).cpu ?? '?')],
    ['Memory', o => (o.memoryUsed || '0') + ' / ' + (capacity(o).memory ?? '?') + 'Mi'],
    ['GPUs', o => (o.gpusUsed || []).length + ' / ' + (capacity(o).gpu ?? 0)],
    ['Devices', o => Object.entries(capacity(o).devices || {})
                           .map(([k, v]) => k + ': ' + v).join(', ')],
    ['Pods', o => o.pods ?? ''],
    ['Cordoned', o => o.cordoned === true || o.cordoned === 'true' ? 'yes' : '']
  ], sorted(c), 'no nodes');
}

function overview(ctx, main) {
  main.append(h('h1', { text: 'Overview' }));
  services(ctx, section(main, 'Services'));
  const nb = section(main, 'Nodes'), jb = section(main, 'Jobs', 'jobs'),
        wb = section(main, 'Workflows');
  const nodes = collection(ctx, 'nodes', {}, later(() => fill(nb, nodeRows(nodes))));
  const jobs = collection(ctx, 'jobs', {}, later(() => fill(jb, 
      phaseBar(countPhases(jobs)),
      table([['Job', o => link('/jobs/' + encodeURIComponent(o.metadata.name), o.metadata.name)],
             ['Phase', o => phase(o.phase)], ['Pods', o => o.pods || ''],
             ['Reason', o => o.reason || '']], sorted(jobs), 'no jobs'))));
  const wfs = collection(ctx, 'workflows', {}, later(() => fill(wb, 
      phaseBar(countPhases(wfs)),
      table([['Workflow', o => link('/workflows/' + encodeURIComponent(o.metadata.name),
                                    o.metadata.name)],
             ['Phase', o => phase(o.phase)], ['Progress', o => o.progress || ''],
             ['Reason', o => o.reason || '']], sorted(wfs), 'no workflows'))));
}

/* ----------------------------------------------------------------- job */

/* Where a pod went and why, from the scheduler's account (pod.why). */
function why(o) {
  const w = o.why;
  if (!w) return o.reason || '';
  const sc = Object.entries(w.scores || {}).map(([n, v]) => n + ' ' + v).join(', ');
  return [w.strategy && 'strategy ' + w.strategy, sc && 'scores ' + sc,
          w.nodes != null && w.nodes + ' nodes', o.reason].filter(Boolean).join('; ');
}

/* The run's reports (run.reported on lark.run.JOB since the Job was
 * submitted, so a Job submitted again under its name starts afresh) as
 * charts, one per number, against the report's step (else its order). */
function runCharts(ctx, box, job, sinceMs) {
  const series = new Map();
  let n = 0, progress = null, ckpt = null, lastSeq = 0;
  const atMs = toMs(state.at);
  const draw = later(() => fill(box, 
      progress ? h('p', {}, 'Progress: step ' + progress.step + ' of ' + progress.total) : null,
      ckpt ? h('p', {}, 'Last checkpoint: ', h('code', { text: ckpt.path || JSON.stringify(ckpt) })) : null,
      series.size ? h('div', { class: 'charts' },
                      [...series].map(([k, pts]) => lineChart(k, pts)))
                  : h('p', { class: 'muted', text: 'no values reported' })));
  const add = ev => {
    if (atMs && toMs(ev.time) > atMs) return false;
    lastSeq = ev.seq || lastSeq;
    if (ev.type !== 'run.reported') return;
    const d = ev.data || {}, v = d.values || {};
    n++;
    if (d.kind === 'progress') progress = v;
    else if (d.kind === 'checkpoint') ckpt = v;
    else for (const [k, y] of Object.entries(v)) {
      if (typeof y !== 'number' || k === 'step') continue;
      const key = d.kind && d.kind !== 'metric' ? d.kind + '.' + k : k;
      if (!series.has(key)) series.set(key, []);
      series.get(key).push([typeof v.step === 'number' ? v.step : n, y]);
    }
    draw();
  };
  const q = { subject: 'lark.run.' + job,
              since: sinceMs ? new Date(sinceMs - 1).toISOString() : null };
  draw();
  const once = h => stream('/api/v1/events', Object.assign({}, q, { follow: ctx.live ? 1 : null }),
                           ctx.signal, add, h);
  (ctx.live ? follow(ctx, () => once(lastSeq ? { 'Last-Event-ID': String(lastSeq) } : {}))
            : once({})).catch(ctx.fail);
}

/* The Job's logs: the last lines, then (live) each new one. */
function jobLogs(ctx, pre, job) {
  const atMs = toMs(state.at);
  const add = r => {
    if (atMs && toMs(r.ts) > atMs) return;
    const stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.append(h('span', { class: r.stream === 'stderr' ? 'stderr' : null },
                 (r.pod || '') + ' ' + (r.line ?? r.text ?? '') + '\n'));
    while (pre.childNodes.length > 2000) pre.firstChild.remove();
    if (stick) pre.scrollTop = pre.scrollHeight;
  };
  const once = () => {
    pre.replaceChildren();
    return stream(API + 'jobs/' + encodeURIComponent(job) + '/logs',
                  { o: 'json', tail: 500, follow: ctx.live ? 1 : null }, ctx.signal, add);
  };
  (ctx.live ? follow(ctx, once) : once()).catch(ctx.fail);
}

/* Stop and Resume for a Job or Workflow, live only (the past is read). */
function actions(ctx, kind, name) {
  if (!ctx.live) return null;
  const act = verb => () => {
    if (verb === 'stop' && !confirm('Stop ' + name + '?')) return;
    write('POST', API + kind + '/' + encodeURIComponent(name) + '/' + verb)
        .then(() => banner(verb + ': sent', 'past'), ctx.fail);
  };
  return h('span', { class: 'actions' },
           h('button', { type: 'button', onclick: act('stop'), text: 'Stop' }),
           h('button', { type: 'button', onclick: act('resume'), text: 'Resume' }));
}

function jobPage(ctx, main, params, name) {
  const head = h('div', { class: 'summary' });
  main.append(h('h1', {}, 'Job ', h('span', { text: name }), actions(ctx, 'jobs', name)), head);
  const tb = section(main, 'Tasks'), pb = section(main, 'Pods', 'pods'),
        cb = section(main, 'Run values'), lb = section(main, 'Logs');
  let charts = false;
  const jobs = collection(ctx, 'jobs', {}, later(() => {
    const o = jobs.items.get(name);
    if (!charts && (charts = true))
      runCharts(ctx, cb, name, o && toMs(o.ts));
    fill(head, o ? h('p', {}, phase(o.phase, 'job-phase'), ' pods ' + (o.pods || ''),
                               o.reason ? ' - ' + o.reason : '')
                           : h('p', {}, phase('', 'job-phase'), ' no Job ' + name + (state.at ? ' then' : ' (yet)')));
  }), name);
  const filter = { job: name };
  const tasks = collection(ctx, 'tasks', filter, later(() => fill(tb, table(
      [['Task', o => o.metadata.name], ['Role', o => o.role || ''],
       ['Replicas', o => o.replicas ?? ''], ['Phase', o => phase(o.phase)]],
      sorted(tasks)))));
  const pods = collection(ctx, 'pods', filter, later(() => fill(pb, table(
      [['Pod', o => o.metadata.name], ['Task', o => o.task || ''],
       ['Phase', o => phase(o.phase)], ['Node', o => o.node || ''],
       ['Attempt', o => o.attempt ?? ''], ['IP', o => o.virtualIP || o.localIP || ''],
       ['Placed because', o => why(o)]],
      sorted(pods)))));
  const pre = h('pre', { class: 'logs', id: 'logs' });
  lb.append(pre);
  jobLogs(ctx, pre, name);
}

/* ------------------------------------------------------------ workflow */

/* The DAG's nodes from the Workflow (its jobs as lark-dag describes them,
 * else its spec's templates), phases from the Jobs themselves when they
 * are newer. */
function dagNodes(wf, jobs) {
  const name = wf.metadata.name;
  const spec = (wf.spec && (wf.spec.jobTemplates || wf.spec.jobs)) || [];
  const list = wf.jobs && wf.jobs.length ? wf.jobs.map(j => ({
    id: j.template || j.name, job: j.name, deps: j.dependencies || [],
    phase: j.phase, reason: j.reason
  })) : spec.map(t => ({ id: t.name, job: name + '-' + t.name, deps: t.dependencies || [] }));
  return list.map(n => {
    const j = jobs.items.get(n.job);
    const p = (j && j.phase) || n.phase || '';
    return { id: n.id, label: n.id, deps: n.deps, phase: p,
             title: n.job + ': ' + (p || 'waiting') + (n.reason ? ' - ' + n.reason : ''),
             href: href('/jobs/' + encodeURIComponent(n.job)), job: n.job,
             reason: (j && j.reason) || n.reason };
  });
}

function workflowPage(ctx, main, params, name) {
  const head = h('div', { class: 'summary' });
  main.append(h('h1', {}, 'Workflow ', h('span', { text: name }),
                actions(ctx, 'workflows', name)), head);
  const db = section(main, 'DAG', 'dag'), jb = section(main, 'Jobs');
  let wfs = null, jobs = null;
  const draw = later(() => {
    const wf = wfs && wfs.items.get(name);
    if (!wf) {
      fill(head, h('p', {}, phase('', 'wf-phase'), ' no Workflow ' + name));
      return;
    }
    const nodes = dagNodes(wf, jobs);
    fill(head, h('p', {}, phase(wf.phase, 'wf-phase'),
                           ' ' + (wf.progress || ''), wf.reason ? ' - ' + wf.reason : ''));
    fill(db, h('div', { class: 'scroll' }, dagSvg(nodes)));
    fill(jb, table([
      ['Template', n => n.id], ['Job', n => link('/jobs/' + encodeURIComponent(n.job), n.job)],
      ['After', n => n.deps.join(', ')], ['Phase', n => phase(n.phase)],
      ['Reason', n => n.reason || '']], nodes));
  });
  jobs = collection(ctx, 'jobs', { workflow: name }, draw);
  wfs = collection(ctx, 'workflows', {}, draw, name);
}

/* --------------------------------------------------------------- audit */

function auditPage(ctx, main, params) {
  main.append(h('h1', { text: 'Audit' }));
  const f = k => params.get(k) || '';
  const input = (k, ph, type) => h('label', {}, k + ' ',
      h('input', { name: k, value: f(k), placeholder: ph, type: type || 'text',
                   step: type ? 1 : null }));
  const form = h('form', { class: 'filters' },
    input('subject', 'lark.ev.job.>'), input('type', 'pod.*'), input('actor', 'admin'),
    input('since', '', 'datetime-local'), h('button', { type: 'submit', text: 'Filter' }),
    h('span', { class: 'muted', text: ' since empty: the last hour' }));
  form.addEventListener('submit', e => {
    e.preventDefault();
    const q = {};
    for (const el of form.elements) if (el.name && el.value) q[el.name] = el.value;
    go('/audit', q);
  });
  const tbody = h('tbody', { id: 'audit-rows' });
  main.append(form, h('table', { class: 'audit' },
    h('thead', {}, h('tr', {}, ['Time', 'Seq', 'Subject', 'Type', 'Actor', 'Data']
                                   .map(t => h('th', { text: t })))), tbody));
  const atMs = toMs(state.at);
  const since = f('since') ? new Date(f('since')).getTime()
                           : (atMs || Date.now()) - 3600e3;
  let last = 0;
  const add = ev => {
    if (atMs && toMs(ev.time) > atMs) return false;
    last = ev.seq;
    tbody.prepend(h('tr', {},
      h('td', { text: fmtTime(toMs(ev.time)) }), h('td', { text: ev.stream + ' ' + ev.seq }),
      h('td', { text: ev.subject }), h('td', { text: ev.type }),
      h('td', { text: ev.actor + (ev.via ? ' via ' + ev.via : '') }),
      h('td', { class: 'data', text: JSON.stringify(ev.data) })));
    while (tbody.childNodes.length > 1000) tbody.lastChild.remove();
  };
  const q = { subject: f('subject'), type: f('type'), actor: f('actor'),
              since: new Date(since).toISOString(), follow: ctx.live ? 1 : null };
  const once = () => {
    if (last) tbody.replaceChildren(); /* a resume starts over from since */
    return stream('/api/v1/events', q, ctx.signal, add);
  };
  (ctx.live ? follow(ctx, once) : once()).catch(ctx.fail);
}

start([
  [/^\/$/, overview],
  [/^\/jobs\/([^/]+)$/, jobPage],
  [/^\/workflows\/([^/]+)$/, workflowPage],
  [/^\/audit$/, auditPage]
]);
