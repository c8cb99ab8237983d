import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
const nc = await connect({ servers: process.argv[2] });
const jsm = await jetstreamManager(nc);
console.log(await jsm.streams.delete(process.argv[3]));
await nc.close();
