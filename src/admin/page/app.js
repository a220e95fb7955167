// app.js — the operators' view. Client keys are attacker-controlled text: every one is written with textContent
// (never innerHTML), and the page runs under `default-src 'self'`. The admin token is kept in sessionStorage and
// sent as a bearer header (no cookie); the live tail is read with fetch() so that it can carry that header too.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  const TOKEN_KEY = 'ratekeeper-admin-token';
  let token = sessionStorage.getItem(TOKEN_KEY) || '';
  let chart = null;
  let inspected = null;

  /** el — an element with attributes and children (strings become text nodes, never markup). */
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) if (c !== undefined && c !== null) e.append(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
    return e;
  }

  // UNSEEN — characters that change how the text around them is shown or are not shown at all (controls, bidi
  // marks, embeddings, overrides and isolates, zero-width ones, lone surrogates): a key holding them could pass for
  // another, so they are shown as \uXXXX escapes, and the key is marked. Keys are never cut: they wrap.
  const UNSEEN = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
  /** shown — a key as text that cannot pass for another key: every UNSEEN character written as \uXXXX (and a backslash as \\ then, so that the escapes are unambiguous). */
  function shown(key) {
    const k = String(key);
    UNSEEN.lastIndex = 0;
    if (!UNSEEN.test(k)) return k;
    return k.replace(/\\/g, '\\\\').replace(UNSEEN, (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`);
  }
  /** keyCell — a table cell showing a key whole, isolated from the text around it, marked when it holds escapes. */
  function keyCell(key) {
    const text = shown(key);
    const marked = text !== String(key);
    return el('td', { class: marked ? 'key escaped' : 'key', dir: 'ltr', title: marked ? 'this key holds invisible or direction-changing characters, shown as \\uXXXX' : undefined }, text);
  }

  function status(text, error) {
    const s = $('status');
    s.textContent = text;
    s.className = error ? 'error' : '';
  }

  /** api — a call to the admin API (relative to the page, so the handler may be mounted under any prefix). */
  async function api(path, options) {
    const headers = { accept: 'application/json' };
    if (token) headers.authorization = `Bearer ${token}`;
    // a change is always declared as JSON: the listener refuses any other (a form or a no-cors fetch of another page)
    const method = (options && options.method) || 'GET';
    if (method !== 'GET') headers['content-type'] = 'application/json';
    const res = await fetch(`admin/${path}`, { method, headers, body: options && options.body !== undefined ? JSON.stringify(options.body) : undefined, cache: 'no-store' });
    const data = res.headers.get('content-type')?.includes('json') ? await res.json() : null;
    if (res.status === 401) {
      $('token-form').hidden = false;
      throw new Error(data?.error || 'the admin token is needed');
    }
    if (!res.ok) throw new Error(data?.error ? `${data.error}${data.field ? ` (${data.field})` : ''}` : `HTTP ${res.status}`);
    if (token) $('token-form').hidden = true;
    return data;
  }

  const fmtRate = (x) => (x >= 100 ? Math.round(x).toLocaleString() : x >= 10 ? x.toFixed(1) : x.toFixed(2));
  const fmtCount = (x) => Math.round(x).toLocaleString();
  function ago(ms) {
    const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    return s < 60 ? `${s} s ago` : s < 3600 ? `${Math.round(s / 60)} min ago` : `${(s / 3600).toFixed(1)} h ago`;
  }
  const until = (u) => (u === null || u === Infinity ? 'until unblocked' : new Date(u).toLocaleTimeString());

  // ---- traffic chart ----
  function drawChart(stats) {
    const step = stats.limiters.find((l) => l.observed)?.step || 1000;
    const observed = stats.limiters.filter((l) => l.observed);
    if (observed.length === 0) return;
    const first = observed[0].series.allowed;
    const n = first.values.length;
    const xs = new Array(n), allowed = new Array(n).fill(0), refused = new Array(n).fill(0);
    for (let i = 0; i < n; i++) xs[i] = (first.start + i * step) / 1000;
    let totalAllowed = 0, totalRefused = 0;
    for (const l of observed) {
      const s = l.series;
      for (let i = 0; i < n; i++) {
        allowed[i] += (s.allowed.values[i] || 0) + (s.exempt.values[i] || 0) + (s['dry-run'].values[i] || 0);
        refused[i] += (s.limited.values[i] || 0) + (s.blocked.values[i] || 0) + (s['store-unavailable'].values[i] || 0);
      }
      totalAllowed += l.outcomes.allowed + l.outcomes.exempt + l.outcomes['dry-run'];
      totalRefused += l.outcomes.limited + l.outcomes.blocked + l.outcomes['store-unavailable'];
    }
    const perSecond = (v) => v.map((x) => (x * 1000) / step);
    // the newest bucket is still filling: leave it out
    const data = [xs.slice(0, -1), perSecond(allowed).slice(0, -1), perSecond(refused).slice(0, -1)];
    $('totals').textContent = `Since start: ${fmtCount(totalAllowed)} allowed, ${fmtCount(totalRefused)} refused (${observed.map((l) => l.name).join(', ')}).`;
    if (typeof window.uPlot !== 'function') {
      $('chart').textContent = 'The chart needs the uplot package (npm install uplot).';
      return;
    }
    if (chart === null) {
      const width = Math.max(320, $('chart').clientWidth - 10);
      // hms — a time as 24-hour HH:MM:SS (8 characters, ~60 px): the x axis asks for 90 px between ticks, so the
      // labels never run together whatever the width and the span (uPlot picks the smallest increment that fits).
      const hms = (v) => new Date(v * 1000).toTimeString().slice(0, 8);
      // latest — the legend shows the newest value when the cursor is off the chart (uPlot's default is "--").
      const latest = (u, si) => { const d = u.data[si]; return d.length > 0 ? d[d.length - 1] : null; };
      const rate = (u, v, si, idx) => { const x = idx == null ? latest(u, si) : v; return x == null ? '--' : fmtRate(x); };
      chart = new window.uPlot({
        width, height: 240,
        series: [
          { label: 'time', value: (u, v, si, idx) => { const x = idx == null ? latest(u, 0) : v; return x == null ? '--' : hms(x); } },
          { label: 'allowed /s', stroke: '#1f7a3f', width: 2, value: rate },
          { label: 'refused /s', stroke: '#b3261e', width: 2, value: rate },
        ],
        axes: [
          { space: 90, incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600], values: (u, ticks) => ticks.map(hms) },
          { label: 'decisions / s' },
        ],
        scales: { x: { time: true } },
      }, data, $('chart'));
      window.addEventListener('resize', () => chart.setSize({ width: Math.max(320, $('chart').clientWidth - 10), height: 240 }));
    } else {
      chart.setData(data);
    }
  }

  // ---- top clients ----
  function drawTop(top) {
    const body = $('top').tBodies[0];
    const rows = top.top.map((e) => {
      const blockBtn = el('button', { type: 'button', class: e.blocked ? 'secondary' : 'danger', onclick: () => e.blocked ? unblock(e.key, e.limiter) : prepareBlock(e.key, e.limiter) }, e.blocked ? 'Unblock' : 'Block…');
      blockBtn.setAttribute('aria-label', `${e.blocked ? 'Unblock' : 'Block'} ${shown(e.key)}`);
      return el('tr', { class: e.blocked ? 'blocked' : '' },
        keyCell(e.key),
        el('td', {}, e.limiter),
        el('td', { class: 'num', title: `± ${fmtRate(e.error)}/s${e.measured !== undefined ? `; its rules measured ${fmtRate(e.measured)}/s` : ''}` }, fmtRate(e.rate)),
        el('td', { class: 'num' }, fmtRate(e.refusedRate)),
        el('td', { class: 'num' }, fmtCount(e.requests)),
        el('td', { class: 'num' }, fmtCount(e.refused)),
        el('td', { title: new Date(e.firstSeen).toISOString() }, ago(e.firstSeen)),
        el('td', { class: e.blocked ? 'yes' : '' }, e.blocked ? 'blocked' : e.exempt ? 'exempt' : 'no'),
        el('td', {}, blockBtn));
    });
    // keep the focused button's row focused across refreshes (keyboard users)
    const focused = document.activeElement && body.contains(document.activeElement) ? document.activeElement.getAttribute('aria-label') : null;
    body.replaceChildren(...rows);
    if (focused) for (const b of body.querySelectorAll('button')) if (b.getAttribute('aria-label') === focused) b.focus();
    $('top-empty').hidden = rows.length > 0;
  }

  function prepareBlock(key, limiter) {
    $('block-key').value = key;
    $('block-limiter').value = limiter || '';
    $('block-for').focus();
    $('block-for').select();
  }

  function drawOverrides(list, table, empty, withReason, onRemove, label) {
    const body = $(table).tBodies[0];
    body.replaceChildren(...list.map((o) => el('tr', {},
      keyCell(o.key),
      el('td', {}, o.limiter),
      el('td', {}, until(o.until)),
      withReason ? el('td', {}, shown(o.reason || '')) : null,
      el('td', {}, el('button', { type: 'button', class: 'secondary', 'aria-label': `${label} ${shown(o.key)}`, onclick: () => onRemove(o.key, o.limiter) }, label)))));
    $(empty).hidden = list.length > 0;
  }

  async function unblock(key, limiter) {
    try {
      await api(`blocks/${encodeURIComponent(key)}${limiter ? `?limiter=${encodeURIComponent(limiter)}` : ''}`, { method: 'DELETE' });
      status(`Unblocked ${shown(key)}.`);
      await refreshLists();
    } catch (e) { status(e.message, true); }
  }

  async function unexempt(key, limiter) {
    try {
      await api(`exemptions/${encodeURIComponent(key)}${limiter ? `?limiter=${encodeURIComponent(limiter)}` : ''}`, { method: 'DELETE' });
      status(`Exemption of ${shown(key)} lifted.`);
      await refreshLists();
    } catch (e) { status(e.message, true); }
  }

  async function override(kind) {
    const key = $('block-key').value;
    if (!key) { $('block-key').focus(); return; }
    const body = { key };
    if ($('block-for').value.trim()) body.for = $('block-for').value.trim();
    if ($('block-reason').value) body.reason = $('block-reason').value;
    if ($('block-limiter').value) body.limiter = $('block-limiter').value;
    try {
      await api(kind, { method: 'POST', body });
      status(`${kind === 'blocks' ? 'Blocked' : 'Exempted'} ${shown(key)}${body.for ? ` for ${body.for}` : ''}.`);
      await refreshLists();
    } catch (e) { status(e.message, true); }
  }

  // ---- inspect ----
  function drawInspection(data) {
    const out = $('inspect-out');
    out.replaceChildren(...data.limiters.map((l) => {
      const d = l.decision;
      const rules = el('table', {}, el('thead', {}, el('tr', {}, ...['Rule', 'Algorithm', 'Admits', 'Remaining', 'Retry after', 'Rate /s'].map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', {}, ...d.rules.map((r) => el('tr', {},
          el('td', {}, r.name), el('td', {}, r.algorithm), el('td', {}, r.allowed ? 'yes' : 'no'),
          el('td', { class: 'num' }, fmtRate(r.remaining)), el('td', { class: 'num' }, r.retryAfter === null ? 'never' : `${Math.ceil(r.retryAfter)} ms`),
          el('td', { class: 'num' }, r.rate === undefined ? '' : fmtRate(r.rate))))));
      const o = l.override;
      const seen = l.observed;
      return el('div', { class: 'card' },
        el('h3', {}, `${l.limiter}: `, el('span', { class: d.allowed ? '' : 'yes' }, d.reason)),
        o ? el('p', {}, `${o.kind === 'block' ? 'Blocked' : 'Exempt'} ${until(o.until)}${o.reason ? ` — reason: ${o.reason}` : ''}`) : el('p', { class: 'muted' }, 'No block or exemption.'),
        seen ? el('p', {}, `Observed: ${fmtRate(seen.rate)}/s (± ${fmtRate(seen.error)}), ${fmtCount(seen.refused)} of ${fmtCount(seen.requests)} refused, first seen ${ago(seen.firstSeen)}.`) : el('p', { class: 'muted' }, 'Not among the tracked heaviest clients.'),
        rules);
    }));
  }

  async function inspect(key) {
    try {
      const data = await api(`keys/${encodeURIComponent(key)}`);
      inspected = key;
      $('reset-key').disabled = false;
      drawInspection(data);
    } catch (e) { status(e.message, true); }
  }

  // ---- live tail (SSE over fetch, so that it carries the token) ----
  let paused = false;
  async function tail() {
    for (;;) {
      try {
        const headers = { accept: 'text/event-stream' };
        if (token) headers.authorization = `Bearer ${token}`;
        const res = await fetch('admin/events', { headers, cache: 'no-store' });
        if (!res.ok) throw new Error(`live tail: HTTP ${res.status}`);
        $('tail-state').textContent = 'connected';
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += decoder.decode(value, { stream: true });
          let at;
          while ((at = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, at);
            buf = buf.slice(at + 2);
            const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
            if (data) addTail(JSON.parse(data));
          }
        }
      } catch (e) {
        $('tail-state').textContent = `disconnected (${e.message}); retrying`;
      }
      await new Promise((r) => setTimeout(r, 2000));
    }
  }

  function addTail(e) {
    if (paused) return;
    const list = $('tail-list');
    const refused = !e.allowed || e.reason === 'dry-run';
    const text = e.skipped && !e.key
      ? `… ${e.skipped} events skipped`
      : `${new Date(e.t).toLocaleTimeString()}  ${e.limiter}  ${e.reason.padEnd(8)}  ${shown(e.key)}${e.rule ? `  (${e.rule})` : ''}${e.skipped ? `  (+${e.skipped} refusals not shown)` : ''}`;
    list.prepend(el('li', { class: refused ? 'refused' : '' }, text));
    while (list.childElementCount > 200) list.lastElementChild.remove();
  }

  // ---- refresh loops ----
  let limiterNames = '';
  async function refreshStats() {
    const stats = await api('stats?last=300');
    const names = stats.limiters.map((l) => l.name);
    if (names.join('\n') !== limiterNames) {
      limiterNames = names.join('\n');
      const sel = $('block-limiter');
      const keep = sel.value;
      sel.replaceChildren(el('option', { value: '' }, 'all limiters'), ...names.map((n) => el('option', { value: n }, n)));
      sel.value = names.includes(keep) ? keep : '';
    }
    drawChart(stats);
  }

  async function refreshLists() {
    const [top, blocks, exemptions] = await Promise.all([
      api(`top?n=${$('top-n').value}&by=${$('top-by').value}`), api('blocks'), api('exemptions'),
    ]);
    drawTop(top);
    drawOverrides(blocks.blocks, 'blocks', 'blocks-empty', true, unblock, 'Unblock');
    drawOverrides(exemptions.exemptions, 'exemptions', 'exemptions-empty', true, unexempt, 'Lift');
  }

  async function refreshConfig() {
    try {
      const c = await api('config');
      $('config-meta').textContent = `Loaded ${new Date(c.loadedAt).toLocaleString()} from ${c.files.length ? c.files.join(', ') : '(no file)'}.`;
      $('config-text').textContent = c.text !== undefined ? c.text : JSON.stringify(c.object, null, 2);
    } catch (e) {
      $('config-meta').textContent = e.message;
    }
  }

  // panels — the refreshers other scripts of the page add (store.js): run on every tick, with this file's helpers
  const panels = [];
  window.ratekeeperAdmin = { api, el, panel: (refresh) => { panels.push(refresh); refresh().catch((e) => status(e.message, true)); } };

  let ticks = 0;
  async function tick() {
    try {
      // the chart every second; the lists every other (on a Redis Cluster a listing asks every slot)
      await Promise.all([refreshStats(), ticks++ % 2 === 0 ? refreshLists() : null, ...panels.map((refresh) => refresh())]);
      if ($('status').className !== 'error') status(`Updated ${new Date().toLocaleTimeString()}.`);
    } catch (e) {
      status(e.message, true);
    }
  }

  // ---- wiring ----
  $('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    token = $('token').value;
    sessionStorage.setItem(TOKEN_KEY, token);
    $('token-form').hidden = true;
    status('Token set.');
    tick();
    refreshConfig();
  });
  $('block-form').addEventListener('submit', (ev) => { ev.preventDefault(); override('blocks'); });
  $('exempt-submit').addEventListener('click', () => override('exemptions'));
  $('inspect-form').addEventListener('submit', (ev) => { ev.preventDefault(); inspect($('inspect-key').value); });
  $('reset-key').addEventListener('click', async () => {
    if (inspected === null) return;
    try {
      await api(`keys/${encodeURIComponent(inspected)}/reset`, { method: 'POST', body: {} });
      status(`Reset ${shown(inspected)}.`);
      await inspect(inspected);
    } catch (e) { status(e.message, true); }
  });
  $('top-by').addEventListener('change', () => tick());
  $('top-n').addEventListener('change', () => tick());
  $('tail-pause').addEventListener('click', () => {
    paused = !paused;
    $('tail-pause').textContent = paused ? 'Resume' : 'Pause';
    $('tail-pause').setAttribute('aria-pressed', String(paused));
  });

  tick();
  refreshConfig();
  setInterval(tick, 1000);
  tail();
})();
