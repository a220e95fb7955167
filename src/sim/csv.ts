/**
 * csv — the little CSV the simulator reads and writes: RFC 4180 fields (a field with a comma, a quote or a line
 * break is quoted, quotes doubled), `\n` line ends on output, `\n` or `\r\n` on input.
 */

/** Cell — what a CSV cell may hold; undefined and NaN are written as an empty cell. */
export type Cell = string | number | boolean | undefined;

/** csvField — one cell as CSV text. Numbers are written exactly as JavaScript prints them (round-trips). */
export function csvField(value: Cell): string {
  if (value === undefined) return '';
  if (typeof value === 'number') return Number.isNaN(value) ? '' : String(value);
  const s = String(value);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** toCsv — a header row and rows of cells, each row in the header's order. */
export function toCsv(header: readonly string[], rows: Iterable<readonly Cell[]>): string {
  const out = [header.map(csvField).join(',')];
  for (const row of rows) out.push(row.map(csvField).join(','));
  return out.join('\n') + '\n';
}

/** CsvRow — one parsed record with the line number (1-based) it started on, for error messages. */
export interface CsvRow {
  line: number;
  fields: string[];
}

/**
 * parseCsv — records of `text`. Blank lines are skipped. Throws with the line number on an unterminated quote or
 * text after a closing quote.
 */
export function parseCsv(text: string): CsvRow[] {
  const rows: CsvRow[] = [];
  let i = 0;
  let line = 1;
  const n = text.length;
  if (text.charCodeAt(0) === 0xfeff) i = 1; // a byte-order mark
  while (i < n) {
    const start = line;
    const fields: string[] = [];
    for (;;) {
      let field = '';
      if (text[i] === '"') {
        i++;
        for (;;) {
          if (i >= n) throw new SyntaxError(`line ${start}: a quoted field is not closed`);
          const c = text[i];
          if (c === '"') {
            if (text[i + 1] === '"') { field += '"'; i += 2; continue; }
            i++;
            break;
          }
          if (c === '\n') line++;
          field += c;
          i++;
        }
        if (i < n && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') {
          throw new SyntaxError(`line ${line}: unexpected text after a closing quote`);
        }
      } else {
        while (i < n && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') field += text[i++];
      }
      fields.push(field);
      if (text[i] === ',') { i++; continue; }
      break;
    }
    if (text[i] === '\r') i++;
    if (text[i] === '\n') { i++; line++; }
    if (!(fields.length === 1 && fields[0].trim() === '')) rows.push({ line: start, fields });
  }
  return rows;
}
