/** redactUrl / redactSecrets — credentials never shown: a table of texts and what may be shown of them. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { redactAddress, redactSecrets, redactUrl } from '../../src/core/redact.js';

test('redactUrl: the password of every URL in a text is masked; users, hosts and the rest stay', () => {
  const rows: [string, string][] = [
    ['rediss://app:hunter2@10.0.0.1:6380', 'rediss://app:***@10.0.0.1:6380'],
    ['redis://:hunter2@h:1/2', 'redis://:***@h:1/2'],
    ['redis://hunter2@h:1', 'redis://***@h:1'],
    ['redis://a:p@ss:w/rd@h:1', 'redis://a:***@h:1'],
    ['rediss://h:1,rediss://u:p1@h:2,rediss://u:p2@h:3', 'rediss://h:1,rediss://u:***@h:2,rediss://u:***@h:3'],
    ['cannot connect to redis://u:pw@h:1 (ECONNREFUSED)', 'cannot connect to redis://u:***@h:1 (ECONNREFUSED)'],
    ['serve: --redis must use redis:// or rediss:// (TLS), got "ftp://u:pw@h"', 'serve: --redis must use redis:// or rediss:// (TLS), got "ftp://u:***@h"'],
    ['127.0.0.1:6379', '127.0.0.1:6379'],
    ['user@example.com wrote', 'user@example.com wrote'],
    ['redis://h:6379', 'redis://h:6379'],
  ];
  for (const [text, shown] of rows) assert.equal(redactUrl(text), shown, text);
});

test('redactSecrets: known passwords are masked wherever they appear, short ones only inside URLs', () => {
  assert.equal(redactSecrets('AUTH failed for sekret-pw (redis://u:sekret-pw@h)', ['sekret-pw']), 'AUTH failed for *** (redis://u:***@h)');
  assert.equal(redactSecrets('a b c', ['a', undefined]), 'a b c');
});

test('redactAddress: one whole address, everything before its last @ masked but the user, with or without a scheme', () => {
  const rows: [string, string][] = [
    ['app:hunter2@10.0.0.1:6379', 'app:***@10.0.0.1:6379'],
    ['hunter2@h:1', '***@h:1'],
    ['redis://app:hun,ter 2@h:1/0', 'redis://app:***@h:1/0'],
    ['rediss://:p@ss@h:1', 'rediss://:***@h:1'],
    ['127.0.0.1:6379', '127.0.0.1:6379'],
    ['redis://h:6379', 'redis://h:6379'],
  ];
  for (const [text, shown] of rows) assert.equal(redactAddress(text), shown, text);
});
