// store.js — the dashboard's Store panel: GET admin/store on every tick of app.js (its `panel` hook), drawn as one
// table per store: each figure, its value, and a line saying what it means. The answer holds numbers and the
// configuration's words only (no client key); it is still written with textContent, as everything on the page.
'use strict';

(function () {
  const page = window.ratekeeperAdmin;
  if (!page) return;
  const { api, el } = page;
  const out = document.getElementById('store-out');

  const count = (x) => Math.round(x).toLocaleString();
  const ms = (x) => (x === null || x === undefined ? '—' : x >= 10_000 ? `${+(x / 1000).toFixed(1)} s` : x >= 100 ? `${Math.round(x)} ms` : x >= 1 ? `${x.toFixed(1)} ms` : `${x.toFixed(2)} ms`);
  const plural = (n, one, many) => `${count(n)} ${n === 1 ? one : many}`;
  const time = (t) => new Date(t).toLocaleTimeString();

  /** row — one figure: its name, its value (data-figure names it for tests and scripts), what it means. */
  function row(figure, name, value, meaning) {
    return el('tr', {}, el('th', { scope: 'row' }, name), el('td', { class: 'num', 'data-figure': figure }, value), el('td', { class: 'muted' }, meaning));
  }

  function table(caption, rows) {
    return el('table', { class: 'figures' }, el('caption', {}, caption),
      el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Figure'), el('th', { scope: 'col', class: 'num' }, 'Now'), el('th', { scope: 'col' }, 'What it means'))),
      el('tbody', {}, ...rows));
  }

  function coalescing(c) {
    if (!c.on) return el('p', { class: 'muted', 'data-figure': 'coalescing' }, 'Hot keys coalesced: off (batch: false): every check is its own script call.');
    return table('Hot keys coalesced (exact)', [
      row('batches', 'Batches', count(c.batches), 'script calls that carried 2 or more checks of one key from the same tick'),
      row('batch-checks', 'Checks in batches', count(c.checks), 'the checks those calls carried (each answered as if sent alone)'),
      row('batch-mean', 'Mean batch size', c.mean === null ? '—' : c.mean.toFixed(1), 'checks ÷ batches: how hot the hot keys are'),
      row('batch-largest', 'Largest batch', count(c.largest), 'the most checks one call carried (at most 512)'),
    ]);
  }

  function localFirst(l, n) {
    if (!l.on) return el('p', { class: 'muted', 'data-figure': 'local-first' }, 'Local-first: off (the exact mode): Redis decides every check.');
    const factor = l.cold === 'fresh' ? 'N×maxUnsynced' : '(N−1)×maxUnsynced';
    const bound = l.bound === null ? `${factor} per key (N is not counted without a fleet)` : `${factor} = ${count(l.bound)} per key with N = ${n}`;
    const lat = l.latency;
    const hist = lat.buckets.map((b, i) => `≤${b.le}: ${count(b.count - (i > 0 ? lat.buckets[i - 1].count : 0))}`).join(', ');
    return table(`Local-first: maxUnsynced ${l.maxUnsynced}, flushEvery ${l.flushEvery} ms, cold '${l.cold}'`, [
      row('unsynced', 'Unsynced units', count(l.unsynced), `cost units this instance admitted that Redis has not acknowledged; bound ${bound}`),
      row('debt', 'Clients in debt', count(l.debt), 'clients whose global state, as last synced, is over its limit (owing)'),
      row('copies', 'Copies', count(l.copies), `clients this instance holds a copy of (at most ${count(l.maxKeys)} per policy)`),
      row('syncs', 'Syncs', count(l.syncs), `clients synced: flushes and fetches answered (fetches, which only read a cold or stale copy: ${count(l.fetches)})`),
      row('sync-calls', 'Sync calls', count(l.calls), 'script calls that carried them (many clients per call)'),
      row('flushed', 'Flushed units', count(l.flushedUnits), 'cost units Redis acknowledged'),
      row('sync-failures', 'Failed sync calls', count(l.failures), 'calls that failed or timed out; their charges are retried with the same sequence number'),
      row('lost', 'Lost units', count(l.lost), 'cost units given up after retrying for a minute (Redis away that long)'),
      row('exact', 'Exact checks', count(l.exact), 'checks of a cost above maxUnsynced, or without room for a copy, decided by Redis'),
      row('sync-mean', 'Sync latency, mean', ms(lat.mean), `round trip of a sync call, over ${plural(lat.count, 'call', 'calls')}; keep flushEvery well above it`),
      row('sync-max', 'Sync latency, max', ms(lat.max), 'the longest round trip so far'),
      row('sync-histogram', 'Sync latency, histogram', count(lat.count), `sync calls by round trip (ms): ${hist}`),
    ]);
  }

  function fleet(s) {
    const f = s.fleet, fb = s.fallback;
    const counted = f.counted === 'registry'
      ? `instances sharing this Redis, as its registry last counted them (heartbeat every ${ms(f.interval)}, ${count(f.beats)} answered)`
      : f.counted === 'fixed' ? 'instances sharing this Redis, as configured (fleet: { instances })' : 'not counted: no fleet (only onError \'memory\' needs N)';
    const fallback = !fb.memory
      ? `onError '${s.onError}': no local fallback; a check Redis does not answer is ${s.onError === 'deny' ? 'refused' : 'admitted'}`
      : fb.active ? `active since ${time(fb.since)}: checks are decided here on the memory fallback, each key's limit ÷ N` : 'inactive: Redis decides (the memory fallback takes over when Redis does not answer)';
    return table('The fleet and its fallback', [
      row('instances', 'Instances (N)', count(f.instances), counted),
      row('fallback', 'Fallback', fb.memory ? (fb.active ? 'active' : 'inactive') : 'none', fallback),
      row('store-failures', 'Store failures', count(fb.failures), `calls answered by the failure policy since the start (timeout ${ms(s.timeout)})`),
    ]);
  }

  function draw(view) {
    if (view.stores.length === 0) {
      out.replaceChildren(el('p', { class: 'muted' }, 'No limiter, so no store.'));
      return;
    }
    out.replaceChildren(...view.stores.map((s) => {
      const used = `${s.limiters} limiter${s.limiters === 1 ? '' : 's'}`;
      if (s.kind === 'memory') {
        return el('div', { class: 'card', 'data-store': 'memory' }, el('h3', {}, `Memory store (${used})`),
          el('p', { class: 'muted' }, `State in this process, at most ${count(s.maxKeys)} keys per policy: nothing to sync, no fleet, no fallback.`));
      }
      if (s.kind !== 'redis') return el('div', { class: 'card', 'data-store': 'other' }, el('h3', {}, `A store of its own (${used})`), el('p', { class: 'muted' }, 'It has no figures to show here.'));
      return el('div', { class: 'card', 'data-store': 'redis' }, el('h3', {}, `Redis store (${used}), onError '${s.onError}'`),
        coalescing(s.coalescing), localFirst(s.localFirst, s.fleet.instances), fleet(s));
    }));
  }

  page.panel(async () => draw(await api('store')));
})();
