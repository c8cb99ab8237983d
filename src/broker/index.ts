// The broker entry of sluice, `import ... from 'sluice/broker'`: publish a
// source's changes to NATS JetStream and apply a stream to a target
// (docs/broker.md). It is the one entry that loads the NATS client
// (@nats-io/*), so the main entry and the commands other than publish and
// subscribe never do (docs/architecture.md, "Entries").
export { Publisher } from './publish.ts';
export type { PublishOptions, PublishPass, PublishedSnapshotReport } from './publish.ts';
export { subscribe } from './subscribe.ts';
export type { SubscribeOptions, SubscribeReport, SubscribeStart, SubscribedBatch } from './subscribe.ts';
export { openStreamLag, readRecordedStreamLags, readStreamLags } from './stream-lag.ts';
export type { StreamLag, StreamLagReader } from './stream-lag.ts';
export { encodeToken, subjectsOf, defaultStreamName } from './subjects.ts';
export type { NatsAuth, NatsConnection, NatsTarget, NatsTls } from './connection/index.ts';
