/** Names of the JetStream streams and consumers the NATS transport keeps; its permissions are granted by them. */
export const EVENTS_STREAM = 'RATCHET_EVENTS';
export const DEAD_LETTER_STREAM = 'RATCHET_DEADLETTER';
/** The durable consumer every worker of a queue shares. */
export const WORKERS = 'workers';

/** The work-queue stream holding `queue`'s jobs. */
export const queueStream = (queue: string) => `RATCHET_QUEUE_${queue}`;
