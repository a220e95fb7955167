import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** Asset — one file of the dashboard, read once. */
export interface Asset {
  type: string;
  body: Buffer;
}

/**
 * PAGE_DIR — the dashboard's files (src/admin/page/) at run time: beside this module when it runs from source,
 * else in src/ of the package from dist/src/admin/ (the package ships src/: package.json "files").
 */
const PAGE_DIR = [new URL('./page/', import.meta.url), new URL('../../../src/admin/page/', import.meta.url)]
  .map((u) => fileURLToPath(u))
  .find((dir) => existsSync(`${dir}index.html`));

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8', js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8', svg: 'image/svg+xml',
};

/**
 * loadAssets — the page (`''`) and its assets by name: app.js, store.js, app.css, icon.svg, and uPlot's script and style from the
 * `uplot` package (resolved from this module, served as they are: no CDN, no build step). A missing uPlot leaves the
 * chart out (the page says so); a missing page folder is an installation error.
 */
export function loadAssets(): Map<string, Asset> {
  if (PAGE_DIR === undefined) throw new Error('ratekeeper/admin: cannot find the page/ folder (looked beside the module and in src/admin/page of the package)');
  const assets = new Map<string, Asset>();
  const file = (name: string, path: string): void => {
    const ext = name.slice(name.lastIndexOf('.') + 1);
    assets.set(name, { type: TYPES[ext] ?? 'application/octet-stream', body: readFileSync(path) });
  };
  file('index.html', `${PAGE_DIR}index.html`);
  file('app.js', `${PAGE_DIR}app.js`);
  file('store.js', `${PAGE_DIR}store.js`);
  file('app.css', `${PAGE_DIR}app.css`);
  file('icon.svg', `${PAGE_DIR}icon.svg`);
  const require = createRequire(import.meta.url);
  for (const name of ['uPlot.iife.min.js', 'uPlot.min.css']) {
    try {
      file(name, require.resolve(`uplot/dist/${name}`));
    } catch {
      // uplot is an optional peer dependency: the page runs without its chart.
    }
  }
  return assets;
}
