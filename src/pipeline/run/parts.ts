import { capturePart } from './capture-part.ts';
import { httpPart } from './http-part.ts';
import type { PartKind } from './part.ts';
import { subscribePart, targetPart } from './target-part.ts';
import { publishPart } from './publish-part.ts';

/**
 * Every kind of part `sluice run` supervises, in the order they start: a
 * new kind is one more entry here (its configs come from the pipeline;
 * each kind only ever sees its own configs, hence the one cast).
 */
export const PART_KINDS = [capturePart, targetPart, publishPart, subscribePart, httpPart] as unknown as readonly PartKind<unknown>[];
