import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { inlineDefinitionSchema, pipelineFileSchema } from '../src/pipeline/schema.ts';
import { projectionDefinitionSchema } from '../src/projection/definition.ts';
import { recordOf } from '../src/sqlite/own-record.ts';

/*
 * Writes docs/sluice.schema.json, the JSON Schema of a pipeline file, from
 * the zod schema sluice checks it with (src/pipeline/schema.ts), so that an
 * editor completes and checks sluice.yml (`# yaml-language-server: $schema=...`).
 * An inline projection is described by the definition schema itself; the
 * keys sluice sets on a stored definition (definedIn, handler) are left out.
 * A test fails when the file is not what this writes.
 */

const INTERNAL = ['definedIn', 'handler'];

export function pipelineJsonSchema(): string {
  // An ownRecord (a record that keeps a "__proto__" key) is described as the z.record it stands for.
  const asRecord = (ctx: { zodSchema: unknown; jsonSchema: object }) => {
    const record = recordOf(ctx.zodSchema);
    if (record === undefined) return false;
    const json = z.toJSONSchema(record, { io: 'input', unrepresentable: 'any', override: asRecord }) as Record<string, unknown>;
    delete json.$schema;
    for (const key of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as Record<string, unknown>)[key];
    Object.assign(ctx.jsonSchema, json);
    return true;
  };
  const definition = z.toJSONSchema(projectionDefinitionSchema, {
    io: 'input',
    unrepresentable: 'any',
    override: (ctx) => void asRecord(ctx),
  }) as Record<string, unknown>;
  delete definition.$schema;
  for (const variant of (definition.oneOf ?? []) as { properties?: Record<string, unknown> }[])
    for (const key of INTERNAL) delete variant.properties?.[key];
  const schema = z.toJSONSchema(pipelineFileSchema, {
    io: 'input',
    unrepresentable: 'any',
    override: (ctx) => {
      if ((ctx.zodSchema as unknown) !== inlineDefinitionSchema) return void asRecord(ctx);
      for (const key of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as Record<string, unknown>)[key];
      Object.assign(ctx.jsonSchema, { description: 'A projection definition (docs/projections.md)', ...definition });
    },
  });
  return `${JSON.stringify({ ...schema, title: 'sluice pipeline file (sluice.yml)' }, null, 2)}\n`;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'sluice.schema.json');
  fs.writeFileSync(out, pipelineJsonSchema());
  console.log(`wrote ${out}`);
}
