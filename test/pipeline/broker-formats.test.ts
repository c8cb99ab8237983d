// a pipeline file's publish takes formats and a subscribe entry a format, each checked
import fs from 'node:fs';
import path from 'node:path';
import { loadPipeline } from '../../src/pipeline/index.ts';
import { describe, expect, test } from '../support/fixtures.ts';

/*
 * `publish: {nats, formats: [jsonl, segment]}` publishes each batch in
 * each format (docs/broker.md, "Formats"); `subscribe[].format` picks the
 * one its target applies. Unset: JSONL. An unknown format is refused.
 */

const SCHEMA = 'CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT);';

function pipelineFile(dir: string, publish: string, subscribe: string): string {
  const file = path.join(dir, 'sluice.yml');
  fs.writeFileSync(
    file,
    `sources:
  - path: app.db
    capture: [issues]
    publish: ${publish}
subscribe:
  - ${subscribe}
`,
  );
  return file;
}

describe('publish formats and a subscription format in a pipeline file', () => {
  test('are read, and default to JSONL', async ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA);
    const p = await loadPipeline(
      pipelineFile(
        tmp,
        '{nats: nats://a:4222, formats: [jsonl, segment]}',
        '{nats: nats://a:4222, source: S1, path: r1.db, format: segment}',
      ),
    );
    expect(p.sources[0]?.publishFormats).toEqual(['jsonl', 'segment']);
    expect(p.sources[0]?.publish).toEqual({ servers: ['nats://a:4222'] });
    expect(p.subscriptions.map((s) => s.format)).toEqual(['segment']);
    const plain = await loadPipeline(pipelineFile(tmp, '{nats: nats://a:4222}', '{nats: nats://a:4222, source: S1, path: r1.db}'));
    expect(plain.sources[0]?.publishFormats).toBeUndefined();
    expect(plain.subscriptions.map((s) => s.format)).toEqual(['jsonl']);
  });

  test('an unknown format is refused with its line', async ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA);
    await expect(
      loadPipeline(pipelineFile(tmp, '{nats: nats://a:4222, formats: [xml]}', '{nats: nats://a:4222, source: S1, path: r1.db}')),
    ).rejects.toThrow(/PIPELINE_INVALID|formats/);
    await expect(
      loadPipeline(pipelineFile(tmp, '{nats: nats://a:4222}', '{nats: nats://a:4222, source: S1, path: r1.db, format: avro}')),
    ).rejects.toThrow(/format/);
  });
});
