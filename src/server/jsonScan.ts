/**
 * jsonScan — a count of a JSON body's values on its bytes, before JSON.parse builds them. JSON.parse makes an object
 * per `{}` and a slot per element: 1.5 MB of empty descriptors (500 000 `{}`) took 140–260 ms of CPU to parse, 4 MB
 * of zeros 100–240 ms, before the service could see that a request has at most 1000 descriptors. The scan counts
 * `{`, `[` and `,` outside strings (so every object, array, member after the first and element after the first) and
 * stops past the bound: a body of more than MAX_JSON_VALUES of them is refused (400) unparsed, naming the top-level
 * member it was passed in (`descriptors`). The same pass bounds the nesting (MAX_DEPTH): a body of arrays nested
 * 200 000 deep cost ~120 ms of CPU to parse only to be refused, and its error message once overflowed the stack. A
 * long string is skipped with Buffer.indexOf (native), so a legitimate body of long values costs little more than a
 * memchr.
 */
import { BACKSLASH, BRACE, BRACKET, CLOSE_BRACE, CLOSE_BRACKET, COMMA, QUOTE } from './jsonBytes.js';

import { MAX_FIELDS } from './rlsWire.js';

/**
 * MAX_JSON_VALUES — the most `{`, `[` and `,` a body may have: the protobuf bound's (a RateLimitRequest of 1000
 * descriptors of 8 entries with their own limit and hits_addend has about 30 000). A /v1/check body has 3.
 */
export const MAX_JSON_VALUES = MAX_FIELDS;

/**
 * MAX_DEPTH — the deepest nesting of arrays and objects a body may have. A RateLimitRequest is 4 deep (request →
 * descriptors → descriptor → entries → entry) and a /v1/check body 1.
 */
export const MAX_DEPTH = 32;

/** JsonProblem — why a body is refused before it is parsed: the field to name, and what is wrong with it. */
export interface JsonProblem {
  field: string;
  message: string;
}

/** SHORT — bytes of a string read one by one before Buffer.indexOf takes over (a native call costs ~100 ns). */
const SHORT = 32;

/**
 * jsonValuesOver — undefined when `bytes` (JSON, or anything: the parser judges the rest) has at most `max` of `{`,
 * `[` and `,` outside strings and nests at most `maxDepth` deep; else the problem, naming the top-level member the
 * count was passed in (`descriptors`), or `body` (and `body` for the depth). Linear; stops at the first bound passed.
 */
export function jsonValuesOver(bytes: Buffer, max: number = MAX_JSON_VALUES, maxDepth: number = MAX_DEPTH): JsonProblem | undefined {
  let n = 0;
  let depth = 0;
  /** member — where the last string at depth 1 starts and ends (inside a member's value, that member's key). */
  let memberStart = -1;
  let memberEnd = -1;
  const len = bytes.length;
  for (let i = 0; i < len; i++) {
    const c = bytes[i];
    if (c === QUOTE) {
      // to the closing quote: the first SHORT bytes one by one (keys and most values end there), then natively
      let j = i + 1;
      const stop = Math.min(len, j + SHORT);
      while (j < stop) {
        const d = bytes[j];
        if (d === QUOTE) break;
        j += d === BACKSLASH ? 2 : 1;
      }
      if (j >= stop) {
        for (;;) {
          const q = bytes.indexOf(QUOTE, j);
          if (q < 0) return undefined;
          const e = bytes.subarray(j, q).indexOf(BACKSLASH);
          if (e < 0) {
            j = q;
            break;
          }
          j += e + 2;
        }
      }
      if (depth === 1) {
        memberStart = i + 1;
        memberEnd = j;
      }
      i = j;
    } else if (c === COMMA || c === BRACE || c === BRACKET) {
      if (c !== COMMA && ++depth > maxDepth) return { field: 'body', message: `is nested deeper than ${maxDepth} arrays and objects` };
      if (++n > max) {
        const field = depth > 1 && memberStart >= 0 ? bytes.toString('utf8', memberStart, Math.min(memberEnd, memberStart + 64)) : 'body';
        return { field, message: `has more than ${max} JSON values (objects, arrays, members, elements) in the body; a request of at most 1000 descriptors has fewer` };
      }
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return undefined;
}
