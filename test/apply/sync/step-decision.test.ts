// a sync step decides current apply rebuild suspend or refuse from plain facts
import { describe, expect, test } from 'vitest';
import { decideFromRow, decideStep, type StepDecision, type StepFacts } from '../../../src/apply/sync/index.ts';

/*
 * sync's step decides from plain facts (step-decision.ts), with no database
 * and no clock: each row below is the facts one step gathers, and what it
 * must do with them.
 */

/** An active mirror built at seq 10, its definition unchanged, its cursor going on, the source at seq 25 with a batch ending at 20. */
const BASE: StepFacts = {
  projection: { table: 'issues', needsImages: false, shadow: true },
  reinit: false,
  stored: { built: true, state: 'active', reason: null },
  gate: 'open',
  build: 'none',
  table: { tracked: true, armed: true, mode: 'images', columnsMatch: true },
  definition: 'same',
  cursor: { status: 'ok', seq: 10, hw: 25, window: false, journalMatches: true, nextEnd: 20 },
};

const at = (over: Partial<StepFacts>): StepFacts => ({ ...BASE, ...over });
const okCursor = (over: Partial<Extract<StepFacts['cursor'], { status: 'ok' }>>): StepFacts['cursor'] => ({
  ...(BASE.cursor as Extract<StepFacts['cursor'], { status: 'ok' }>),
  ...over,
});
const rebuild = (over: Partial<Extract<StepDecision, { does: 'rebuild' }>>): StepDecision => ({
  does: 'rebuild',
  over: true,
  protected: false,
  resume: false,
  ...over,
});
const suspend = (reason: string, detail: Record<string, unknown>, stored = false): StepDecision =>
  ({ does: 'suspend', reason, detail, stored }) as StepDecision;
const refused = { reason: 'ALTER_SOURCE_KEY_CHANGED', error: new Error('Rejected: the key changed') } as const;

const TABLE: ReadonlyArray<readonly [string, StepFacts, StepDecision]> = [
  // apply
  ['the next bounded batch after the cursor', BASE, { does: 'apply', from: 10, to: 20, hw: 25, window: false }],
  [
    'an explicit range, cut at the high-water mark',
    at({ range: { fromSeq: 8, toSeq: 40 } }),
    { does: 'apply', from: 8, to: 25, hw: 25, window: false },
  ],
  [
    'across a schema window: everything to the high-water mark, to prove',
    at({ cursor: okCursor({ window: true, nextEnd: undefined }) }),
    { does: 'apply', from: 10, to: 25, hw: 25, window: true },
  ],
  [
    'across a schema window even with no event since',
    at({ cursor: okCursor({ window: true, seq: 25, nextEnd: undefined }) }),
    { does: 'apply', from: 25, to: 25, hw: 25, window: true },
  ],
  [
    'a Compatible definition change goes on from the cursor',
    at({ definition: 'compatible' }),
    { does: 'apply', from: 10, to: 20, hw: 25, window: false },
  ],
  [
    'the same projection under an older fingerprint goes on',
    at({ definition: 'restamp' }),
    { does: 'apply', from: 10, to: 20, hw: 25, window: false },
  ],
  [
    'a suspension whose cause is gone (the table armed again) applies what there is',
    at({ stored: { built: true, state: 'suspended', reason: 'TABLE_UNARMED' } }),
    { does: 'apply', from: 10, to: 20, hw: 25, window: false },
  ],
  // current
  [
    'nothing after the cursor',
    at({ cursor: okCursor({ seq: 25, nextEnd: 25 }) }),
    { does: 'current', seq: 25, commit: false, clears: false },
  ],
  [
    'an explicit range already applied',
    at({ range: { fromSeq: 2, toSeq: 8 } }),
    { does: 'current', seq: 10, commit: false, clears: false },
  ],
  [
    'nothing to apply, but a Compatible definition stored: committed',
    at({ definition: 'compatible', cursor: okCursor({ seq: 25, nextEnd: 25 }) }),
    { does: 'current', seq: 25, commit: true, clears: false },
  ],
  [
    'nothing to apply, but a stale protected rebuild rolled back: committed',
    at({ build: 'stale', cursor: okCursor({ seq: 25, nextEnd: 25 }) }),
    { does: 'current', seq: 25, commit: true, clears: false },
  ],
  [
    'nothing to apply and a suspension whose cause is gone: cleared, committed',
    at({ stored: { built: true, state: 'suspended', reason: 'NEEDS_IMAGES_MODE' }, cursor: okCursor({ seq: 25, nextEnd: 25 }) }),
    { does: 'current', seq: 25, commit: true, clears: true },
  ],
  // rebuild
  ['the target does not hold it: the first build', at({ stored: undefined }), rebuild({ over: false })],
  [
    'never built (suspended before its first snapshot): the first build again',
    at({ stored: { built: false, state: 'suspended', reason: 'TABLE_UNARMED' } }),
    rebuild({ over: false }),
  ],
  ['a reinit: protected beside the live projection', at({ reinit: true }), rebuild({ reason: 'REINIT', protected: true })],
  [
    'a reinit of a kind with no shadow build: in one transaction',
    at({ reinit: true, projection: { ...BASE.projection, shadow: false } }),
    rebuild({ reason: 'REINIT' }),
  ],
  [
    'a reinit with an explicit range: in one transaction',
    at({ reinit: true, range: { fromSeq: 10, toSeq: 20 } }),
    rebuild({ reason: 'REINIT' }),
  ],
  [
    'a protected rebuild in progress goes on, a reinit asked meanwhile too',
    at({ build: 'resumes', reinit: true }),
    rebuild({ protected: true, resume: true }),
  ],
  [
    'its stored definition did not compile and this one does',
    at({ stored: { built: true, state: 'suspended', reason: 'SOURCE_COLUMN_MISSING' } }),
    rebuild({ reason: 'DEFINITION_CHANGED', protected: true }),
  ],
  ['a Rebuildable definition change', at({ definition: 'rebuild' }), rebuild({ reason: 'DEFINITION_CHANGED', protected: true })],
  [
    'a cursor a snapshot repairs (the source was bumped)',
    at({ cursor: { status: 'rebuild', reason: 'GENERATION_CHANGED', message: 'bumped' } }),
    rebuild({ reason: 'GENERATION_CHANGED', protected: true }),
  ],
  // suspend
  [
    'a cursor that is garbage',
    at({ cursor: { status: 'error', message: 'not a cursor' } }),
    suspend('CURSOR_MALFORMED', { message: 'not a cursor' }),
  ],
  [
    'a cursor only a fix of the source repairs',
    at({ cursor: { status: 'rebuild', reason: 'TABLE_UNTRACKED', message: 'disabled', why: 'TABLE_DISABLED' } }),
    suspend('TABLE_UNTRACKED', { table: 'issues', why: 'TABLE_DISABLED', message: 'disabled' }),
  ],
  [
    'a stored suspension that stands (diverged rows)',
    at({ stored: { built: true, state: 'suspended', reason: 'TARGET_DIVERGED' }, gate: 'stands' }),
    suspend('TARGET_DIVERGED', {}, true),
  ],
  [
    "a user's UNIQUE index still there: waits, once the cursor is checked",
    at({ stored: { built: true, state: 'suspended', reason: 'TARGET_CONSTRAINT' }, gate: 'waits' }),
    suspend('TARGET_CONSTRAINT', {}, true),
  ],
  [
    'a first build of an untracked table',
    at({ stored: undefined, table: { tracked: false, armed: false, columnsMatch: false } }),
    suspend('TABLE_UNTRACKED', { table: 'issues' }),
  ],
  [
    'a rebuild of an unarmed table',
    at({ reinit: true, table: { tracked: true, armed: false, why: 'TRIGGER_MISSING', mode: 'images', columnsMatch: true } }),
    suspend('TABLE_UNARMED', { table: 'issues', why: 'TRIGGER_MISSING' }),
  ],
  [
    'a build of a kind that reads before-images from a table in keys mode',
    at({ stored: undefined, projection: { ...BASE.projection, needsImages: true }, table: { ...BASE.table, mode: 'keys' } }),
    suspend('NEEDS_IMAGES_MODE', { table: 'issues', mode: 'keys' }),
  ],
  // refuse
  [
    'a Rejected definition change',
    at({ definition: { refused } }),
    { does: 'refuse', reason: 'ALTER_SOURCE_KEY_CHANGED', error: refused.error },
  ],
  [
    'journal columns that are not the compiled ones',
    at({ cursor: okCursor({ journalMatches: false }) }),
    { does: 'refuse', reason: 'PROJECTION_OUTDATED' },
  ],
  [
    'a protected rebuild in progress over journal columns that are not the compiled ones',
    at({ build: 'resumes', table: { ...BASE.table, columnsMatch: false } }),
    { does: 'refuse', reason: 'PROJECTION_OUTDATED' },
  ],
];

describe('a sync step decides from plain facts', () => {
  test.for(TABLE)('%s', ([, facts, decision]) => {
    expect(decideStep(facts)).toEqual(decision);
  });

  test('the stored row decides alone before the definition and the cursor are read, and leaves the rest to them', () => {
    // Whatever the cursor or the definition would say, these never read them.
    const unread = { definition: undefined, cursor: undefined } as unknown as StepFacts;
    expect(decideFromRow({ ...BASE, ...unread, reinit: true })).toEqual(rebuild({ reason: 'REINIT', protected: true }));
    expect(
      decideFromRow({ ...BASE, ...unread, gate: 'stands', stored: { built: true, state: 'suspended', reason: 'TARGET_DIVERGED' } }),
    ).toEqual(suspend('TARGET_DIVERGED', {}, true));
    expect(decideFromRow({ ...BASE, ...unread, stored: undefined })).toEqual(rebuild({ over: false }));
    // An active row, a waiting UNIQUE index: the definition and the cursor decide.
    expect(decideFromRow(BASE)).toBeUndefined();
    expect(decideFromRow(at({ gate: 'waits', stored: { built: true, state: 'suspended', reason: 'TARGET_CONSTRAINT' } }))).toBeUndefined();
  });

  test('a definition refused or rebuilt is decided before the cursor, which may be anything then', () => {
    const broken = { status: 'error', message: 'not a cursor' } as const;
    expect(decideStep(at({ definition: 'rebuild', cursor: broken }))).toEqual(rebuild({ reason: 'DEFINITION_CHANGED', protected: true }));
    expect(decideStep(at({ definition: { refused }, cursor: broken }))).toEqual({
      does: 'refuse',
      reason: 'ALTER_SOURCE_KEY_CHANGED',
      error: refused.error,
    });
  });
});
