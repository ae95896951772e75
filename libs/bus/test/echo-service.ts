import type { MessageCodec } from '../src/definitions';

/** A JSON codec for test messages: decoding anything but a JSON object throws, like a protobuf decode of garbage. */
export function jsonCodec<T>(): MessageCodec<T> {
  return {
    encode: (message) => ({ finish: () => new Uint8Array(Buffer.from(JSON.stringify(message))) }),
    decode: (input) => {
      const value: unknown = JSON.parse(Buffer.from(input).toString('utf8'));
      if (typeof value !== 'object' || value === null) throw new Error('expected a JSON object');
      return value as T;
    },
  };
}

export interface EchoRequest {
  text: string;
  /** How long the handler takes, ms. */
  delayMs?: number;
}
export interface EchoReply {
  text: string;
  servedBy: string;
  requestId: string;
}

let counter = 0;

/** A fresh service definition per test, so subjects never collide between tests. */
export function echoDefinition() {
  counter += 1;
  const fullName = `ratchet.test.Echo${process.pid}x${counter}Service`;
  return {
    name: `Echo${counter}Service`,
    fullName,
    methods: {
      echo: { name: 'Echo', requestType: jsonCodec<EchoRequest>(), responseType: jsonCodec<EchoReply>(), requestStream: false, responseStream: false },
      relay: { name: 'Relay', requestType: jsonCodec<EchoRequest>(), responseType: jsonCodec<EchoReply>(), requestStream: false, responseStream: false },
      unserved: { name: 'Unserved', requestType: jsonCodec<EchoRequest>(), responseType: jsonCodec<EchoReply>(), requestStream: false, responseStream: false },
      watch: { name: 'Watch', requestType: jsonCodec<EchoRequest>(), responseType: jsonCodec<EchoReply>(), requestStream: false, responseStream: true },
    },
  } as const;
}

export interface JobMessage {
  n: number;
  behaviour?: 'ok' | 'hang' | 'retryable-once' | 'fatal' | 'slow';
  durationMs?: number;
}
export const jobCodec = jsonCodec<JobMessage>();

export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}`;
}

/** A logger double that records what it was told. */
export function recordingLogger() {
  const records: { level: 'warn' | 'error'; details: object; message: string }[] = [];
  return {
    records,
    warn: (details: object, message: string) => records.push({ level: 'warn', details, message }),
    error: (details: object, message: string) => records.push({ level: 'error', details, message }),
  };
}
