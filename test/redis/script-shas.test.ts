/**
 * The composed scripts are the same bytes as before the composer was cut into builders: a corpus of policies
 * (script-corpus.ts) whose scripts' SHA1s were recorded from main's build f65c9cc (fixtures/script-shas.json). A
 * script's SHA1 is its name on Redis (EVALSHA), so a changed byte is also a new script cached on every server.
 * One cosmetic change is kept: f65c9cc indented the refund script's give-back block wrongly (only the first line of
 * each rule's refund template got the block's indent); the 51 refund scripts of the corpus were regenerated after
 * checking that they differ from f65c9cc's in leading spaces only (`diff -b` of the texts empty, same lines), every
 * check, compound and small script byte-identical. To see a difference: dump the texts of scriptCorpus (pass
 * functions returning { sha: script.text }) from both builds and diff them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Policy } from '../../src/core/policy.js';
import { rules } from '../../src/core/rules.js';
import { compoundScript, opScript, policyScript, refundScript } from '../../src/stores/redis/scripts.js';
import { scriptCorpus } from './script-corpus.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const recorded = JSON.parse(readFileSync(resolve(root, 'test/redis/fixtures/script-shas.json'), 'utf8')) as Record<string, string>;

test('every script of the corpus is byte-identical to the recorded one (fixtures/script-shas.json: main f65c9cc, refund scripts re-indented)', () => {
  const now = scriptCorpus({ rules, Policy, policyScript, refundScript, compoundScript, opScript });
  assert.ok(Object.keys(recorded).length > 150, 'the fixture holds the whole corpus');
  const differ = Object.keys(recorded).filter((k) => now[k] !== recorded[k]);
  assert.deepEqual(differ, [], `scripts that changed: ${differ.join('; ')}`);
  assert.deepEqual(Object.keys(now).sort(), Object.keys(recorded).sort());
});
