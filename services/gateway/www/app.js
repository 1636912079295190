/*
 * app.js - the dashboard's core: DOM helpers, the API, JSON-lines streams
 * (watches and feeds), collections kept current by watch, the time control
 * and the router. pages.js holds the pages, svg.js the drawings.
 *
 * Invariants:
 *  - a page owns one AbortController (its ctx); leaving the page or moving
 *    in time aborts it, which ends every request and stream the page
 *    started, so nothing from an old page or an old moment draws into the
 *    new one;
 *  - state.at (RFC 3339, or null when live) is set only by the router from
 *    the address (#/path?at=...); every object read carries it, and while
 *    it is set no watch or follow is opened;
 *  - a watch resumes from the last resourceVersion it saw, so a dropped
 *    connection loses no change.
 * The login token arrives once as ?token= and lives on in the HttpOnly
 * cookie the gateway sets; the page removes it from the address bar.
 */
'use strict';

const API = '/api/v1/rlinf.io/v1alpha1/';
const state = { at: null, page: null, t0: 0 };

/* ---------------------------------------------------------------- DOM */

function append(el, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k == null || k === false) continue;
    el.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return el;
}

/* Replaces el's children; null and false children are left out. */
function fill(el, ...kids) {
  el.replaceChildren();
  return append(el, kids);
}

/* h('a', {href: '#/', class: 'x', onclick: fn, text: 'hi'}, ...children) */
function h(tag, props, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v == null || v === false) continue;
    if (k === 'text') el.textContent = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v);
  }
  return append(el, kids);
}

const SVGNS = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...kids) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {}))
    if (v != null) el.setAttribute(k, v);
  return append(el, kids);
}

function pad2(n) { return String(n).padStart(2, '0'); }

/* Local time as a datetime-local field holds it: 2026-12-02T03:28:35. */
function localInput(ms) {
  const d = new Date(ms);
  return d.getFullYear() + '-' + pad2(d.getMonth() + 1) + '-' +
         pad2(d.getDate()) + 'T' + pad2(d.getHours()) + ':' +
         pad2(d.getMinutes()) + ':' + pad2(d.getSeconds());
}
function fmtTime(ms) { return ms ? localInput(ms).replace('T', ' ') : ''; }

/* A time as milliseconds: RFC 3339 text, or a number in ns, us or ms. */
function toMs(t) {
  if (t == null || t === '') return 0;
  if (typeof t === 'string' && !/^\d+$/.test(t)) return Date.parse(t) || 0;
  const n = Number(t);
  return n > 1e17 ? n / 1e6 : n > 1e14 ? n / 1e3 : n;
}

/* ---------------------------------------------------------------- API */

class HttpError extends Error {
  constructor(status, body) {
    const e = body && body.error;
    super(e ? e.code + ': ' + e.message : 'HTTP ' + status);
    this.status = status;
    this.body = body;
  }
}

function url(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {}))
    if (v != null && v !== '' && v !== false) q.set(k, v);
  const qs = q.toString();
  return qs ? path + '?' + qs : path;
}

async function fail(r) {
  const text = await r.text();
  let body = text;
  try { body = JSON.parse(text); } catch (e) { /* plain text */ }
  return new HttpError(r.status, body);
}

/* One JSON answer; object reads go through read(), which adds ?at=. */
async function api(path, params, signal, opts) {
  const r = await fetch(url(path, params), Object.assign(
      { signal, headers: { Accept: 'application/json' } }, opts));
  if (!r.ok) throw await fail(r);
  return r.json();
}
function read(path, params, signal) {
  return api(path, Object.assign({}, params, { at: state.at }), signal);
}

/* A write as the page does it: the cookie authenticates it, the header
 * says it is no cross-site form. */
function write(method, path) {
  return api(path, null, undefined,
             { method, headers: { 'X-Lark-Request': '1' } });
}

/* Calls each(record) for every JSON line of the answer until it ends. */
async function stream(path, params, signal, each, headers) {
  const r = await fetch(url(path, params), {
    signal, headers: Object.assign({ Accept: 'application/json' }, headers)
  });
  if (!r.ok) throw await fail(r);
  const rd = r.body.getReader(), dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await rd.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (line && each(JSON.parse(line)) === false) return rd.cancel();
    }
  }
  if (buf.trim()) each(JSON.parse(buf));
}

function sleep(ms, signal) {
  return new Promise(res => {
    const t = setTimeout(res, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); res(); });
  });
}

/* Runs open() again whenever its stream ends or drops, until the page
 * goes: a follow that outlives a gateway restart. */
async function follow(ctx, open) {
  let wait = 500;
  while (!ctx.signal.aborted) {
    try {
      await open();
      wait = 500;
    } catch (e) {
      if (ctx.signal.aborted) return;
      if (e.status === 401 || e.status === 403) throw e;
      ctx.note('reconnecting: ' + e.message);
    }
    await sleep(wait, ctx.signal);
    wait = Math.min(wait * 2, 5000);
  }
}

/* ---------------------------------------------------------- collections */

function rvOf(o) {
  return Number((o && o.metadata && o.metadata.resourceVersion) || 0);
}

/*
 * A kind's objects (filtered as params says) in c.items (name -> object):
 * the list, page by page, then, when live, a watch after the first page's
 * resourceVersion (a change replayed over a later page is harmless: the
 * object is set again). changed(c) after the list and after each change.
 * only(name) keeps one object, for a page about one.
 */
function collection(ctx, kind, params, changed, only) {
  const c = { items: new Map(), rv: 0, ready: false };
  const keep = o => !only || o.metadata.name === only;
  const run = async () => {
    let cont = null, first = true;
    do {
      const l = await read(API + kind,
                           Object.assign({}, params, { limit: 500, continue: cont }),
                           ctx.signal);
      for (const o of l.items || []) if (keep(o)) c.items.set(o.metadata.name, o);
      if (first) c.rv = Number(l.metadata.resourceVersion || 0);
      first = false;
      cont = l.metadata.continue;
    } while (cont);
    c.ready = true;
    changed(c);
    if (!ctx.live) return;
    await follow(ctx, () => stream(
        API + kind,
        Object.assign({}, params, { watch: 1, resourceVersion: c.rv }),
        ctx.signal, ch => {
          c.rv = Math.max(c.rv, rvOf(ch.object));
          if (ch.type === 'BOOKMARK' || !ch.object || !keep(ch.object)) return;
          if (ch.type === 'DELETED') c.items.delete(ch.object.metadata.name);
          else c.items.set(ch.object.metadata.name, ch.object);
          changed(c);
        }));
  };
  run().catch(ctx.fail);
  return c;
}

/* ------------------------------------------------------------ the page */

/* Calls fn at most once a frame, however often it is asked to. */
function later(fn) {
  let asked = false;
  return () => {
    if (asked) return;
    asked = true;
    requestAnimationFrame(() => { asked = false; fn(); });
  };
}

function banner(text, cls) {
  const b = document.getElementById('banner');
  b.textContent = text || '';
  b.className = cls || '';
  b.hidden = !text;
}

function newCtx() {
  const ac = new AbortController();
  const ctx = {
    signal: ac.signal, abort: () => ac.abort(), live: !state.at,
    note: text => { if (!ac.signal.aborted) banner(text, 'warn'); },
    fail: e => {
      if (ac.signal.aborted || (e && e.name === 'AbortError')) return;
      if (e.status === 401)
        banner('Not signed in: open the dashboard address `larkctl up` ' +
               'printed (it carries the login token).', 'err');
      else banner(String(e.message || e), 'err');
    }
  };
  return ctx;
}

/* ------------------------------------------------------ address, router */

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const i = raw.indexOf('?');
  return {
    path: i < 0 ? raw : raw.slice(0, i),
    params: new URLSearchParams(i < 0 ? '' : raw.slice(i + 1))
  };
}

/* A link inside the dashboard that keeps the page's moment. */
function href(path, params) {
  const q = new URLSearchParams(params || {});
  if (state.at) q.set('at', state.at);
  const qs = q.toString();
  return '#' + path + (qs ? '?' + qs : '');
}
function link(path, text) { return h('a', { href: href(path), text }); }

function go(path, params) { location.hash = href(path, params); }

/* The moment shown: null returns to live. Keeps the page's own params. */
function setAt(at) {
  const { path, params } = parseHash();
  if (at) params.set('at', at); else params.delete('at');
  const qs = params.toString();
  location.hash = '#' + path + (qs ? '?' + qs : '');
}

let routes = [];

function route() {
  const { path, params } = parseHash();
  state.at = params.get('at') || null;
  if (state.at && !toMs(state.at)) state.at = null;
  if (state.page) state.page.abort();
  const ctx = newCtx();
  state.page = ctx;
  banner(state.at ? 'As at ' + fmtTime(toMs(state.at)) +
         ': watches stopped. Live returns to now.' : '', 'past');
  document.body.classList.toggle('past', !!state.at);
  for (const a of document.querySelectorAll('nav a'))
    a.href = href(a.dataset.path);
  timectl.sync();
  const main = document.getElementById('main');
  main.replaceChildren();
  for (const [re, page] of routes) {
    const m = path.match(re);
    if (m) {
      page(ctx, main, params, ...m.slice(1).map(decodeURIComponent));
      return;
    }
  }
  main.append(h('p', { text: 'No page ' + path + '.' }));
}

/* --------------------------------------------------------- time control */

/*
 * A slider over the log's time span (its first event to now, in seconds)
 * and a datetime field; either sets ?at=. The slider previews while it
 * moves and commits when let go.
 */
const timectl = {
  init() {
    this.slider = document.getElementById('at-slider');
    this.field = document.getElementById('at-field');
    this.slider.step = 1000;
    this.span(Date.now() - 3600e3);
    this.slider.addEventListener('input', () =>
        this.field.value = localInput(Number(this.slider.value)));
    this.slider.addEventListener('change', () => this.commit(Number(this.slider.value)));
    this.field.addEventListener('change', () => {
      const ms = new Date(this.field.value).getTime();
      if (ms) this.commit(ms);
    });
    document.getElementById('live').addEventListener('click', () => setAt(null));
    stream('/api/v1/events', { subject: 'lark.ev.>', limit: 1 },
           undefined, ev => { this.span(toMs(ev.time)); return false; })
        .catch(() => { /* an empty log: keep the last hour */ });
    /* The slider's end follows now, unless a hand is on it. */
    setInterval(() => {
      if (!state.at && document.activeElement !== this.slider) this.sync();
    }, 5000);
  },
  span(t0) {
    state.t0 = Math.floor(t0 / 1000) * 1000;
    this.slider.min = state.t0;
    this.sync();
  },
  commit(ms) {
    setAt(ms >= Date.now() - 1000 ? null : new Date(ms).toISOString());
  },
  sync() {
    const now = Date.now();
    this.slider.max = Math.ceil(now / 1000) * 1000;
    const at = state.at ? toMs(state.at) : 0;
    this.slider.value = at || this.slider.max;
    this.field.value = at ? localInput(at) : '';
    document.getElementById('mode').textContent = at ? 'past' : 'live';
  }
};

/* Takes ?token= (and ?at=) out of the address: the token now lives in the
 * cookie, the moment in the hash where the router reads it. */
function tidyAddress() {
  const q = new URLSearchParams(location.search);
  const at = q.get('at');
  if (!q.has('token') && !at) return;
  q.delete('token');
  q.delete('at');
  let hash = location.hash || '#/';
  if (at && !parseHash().params.has('at'))
    hash += (hash.includes('?') ? '&' : '?') + 'at=' + encodeURIComponent(at);
  const qs = q.toString();
  history.replaceState(null, '', location.pathname + (qs ? '?' + qs : '') + hash);
}

function start(table) {
  routes = table;
  tidyAddress();
  timectl.init();
  window.addEventListener('hashchange', route);
  route();
}
