import type { PipelineSource } from '../index.ts';
import { followPublisher } from '../follow/index.ts';
import type { PartKind } from './part.ts';

/*
 * A source's `publish`: its changes published to NATS JetStream through
 * the publish loop `publish --follow` runs (follow/publish-loop.ts). The
 * broker, and the NATS client with it, is loaded by import() here, only
 * when a file declares a publisher. A broker that goes away fails the part,
 * which is retried with backoff and resumes where the broker last acked;
 * the targets go on meanwhile. (The first of `nats`'s servers: the client
 * connects to one URL.)
 */

type Published = PipelineSource & { readonly publish: NonNullable<PipelineSource['publish']> };

export const publishPart: PartKind<Published> = {
  kind: 'publish',
  configs: (pipeline) => pipeline.sources.filter((s): s is Published => s.publish !== undefined),
  name: (s) => s.path,
  fingerprint: (s) => JSON.stringify([s.publish, s.publishFormats ?? ['jsonl']]),
  async run(source, ctx) {
    const broker = await import('../../broker/index.ts');
    const publisher = await broker.Publisher.open(source.path, source.publish, {
      log: (line) => ctx.log('info', 'broker', line),
      signal: ctx.signal,
      ...(source.publishFormats === undefined ? {} : { formats: source.publishFormats }),
    });
    try {
      ctx.log('info', 'start', `publishing to stream ${publisher.stream}`);
      const tally = { snapshots: [] };
      await followPublisher(publisher, source.path, {
        signal: ctx.signal,
        tally,
        onPass: () => ctx.ok(),
      });
    } finally {
      await publisher.close();
    }
  },
};
