import { RatekeeperError } from '../core/errors.js';
import type { VegaLiteSpec } from './figures.js';

/**
 * plot — renders Vega-Lite specifications to SVG without a browser: vega-lite compiles the spec to Vega, and a
 * headless vega View (renderer 'none') writes the SVG. vega and vega-lite are optional peer dependencies of
 * ratekeeper; this is the only module that loads them, and only when a plot is asked for.
 */

type Vega = typeof import('vega');
type VegaLite = typeof import('vega-lite');

/** libraries — the loaded modules, once. */
let libraries: Promise<{ vega: Vega; vl: VegaLite }> | undefined;

/**
 * loadVega — resolves once vega and vega-lite are loaded, or rejects saying how to install them. Their types stay out
 * of ratekeeper's declarations: they are optional peers, and a project without them must still typecheck.
 */
export async function loadVega(): Promise<void> {
  await modules();
}

/** modules — vega and vega-lite, loaded once. */
function modules(): Promise<{ vega: Vega; vl: VegaLite }> {
  libraries ??= (async () => {
    try {
      const [vega, vl] = await Promise.all([import('vega'), import('vega-lite')]);
      return { vega, vl };
    } catch (e) {
      libraries = undefined;
      const why = e instanceof Error ? e.message : String(e);
      throw new RatekeeperError(`the simulator's plots need the optional peer dependencies vega and vega-lite: npm install vega vega-lite (${why})`, 'ERR_CONFIG');
    }
  })();
  return libraries;
}

/** renderSvg — the SVG text of a Vega-Lite specification. */
export async function renderSvg(spec: VegaLiteSpec): Promise<string> {
  const { vega, vl } = await modules();
  // Vega-Lite's warnings (merged legends and the like) are not the user's business: a quiet logger.
  const logger = vega.logger(vega.None);
  const compiled = vl.compile(spec as unknown as Parameters<VegaLite['compile']>[0], { logger }).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none', logLevel: vega.None });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
