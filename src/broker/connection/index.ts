// The face of src/broker/connection/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

export { authWords, connectionLabel, natsConnection, splitServers } from './connection.ts';
export type { NatsAuth, NatsConnection, NatsTarget, NatsTls } from './connection.ts';
export { closingStrays } from './stray-sockets.ts';
