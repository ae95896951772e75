import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

// A stand-in for an OpenTelemetry Collector's OTLP/HTTP receiver: what the
// SDK's exporters send to POST /v1/traces, decoded from protobuf (their
// default, `http/protobuf`) or JSON (`http/json`), kept in memory for tests.

/** An attribute value as OTLP carries it; 64-bit integers stay exact as bigint. */
export type OtlpValue = string | boolean | number | bigint | Uint8Array | readonly OtlpValue[] | { readonly [key: string]: OtlpValue } | undefined;

/** One span as received, with the `service.name` of the resource it came with. */
export interface ReceivedSpan {
  /** 32 lower-case hex characters. */
  readonly traceId: string;
  /** 16 lower-case hex characters. */
  readonly spanId: string;
  /** Undefined for a root span. */
  readonly parentSpanId: string | undefined;
  readonly name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer (0 unspecified). */
  readonly kind: number;
  /** The resource's `service.name`; '' when it has none. */
  readonly serviceName: string;
  readonly resource: Readonly<Record<string, OtlpValue>>;
  readonly attributes: Readonly<Record<string, OtlpValue>>;
  readonly links: readonly { readonly traceId: string; readonly spanId: string }[];
  /** OTLP's StatusCode: 0 unset, 1 ok, 2 error. */
  readonly status: { readonly code: number; readonly message: string };
  readonly startTimeUnixNano: bigint;
  readonly endTimeUnixNano: bigint;
}

export interface OtlpReceiverOptions {
  /** Default: a free port on 127.0.0.1. */
  readonly port?: number;
  /**
   * false: read every request and never answer, like a collector that hangs
   * (nothing is decoded or kept; `requests()` still counts). Default true.
   */
  readonly answer?: boolean;
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`, for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter adds /v1/traces). */
  readonly url: string;
  readonly port: number;
  /** Every span received so far, in arrival order. */
  spans(): readonly ReceivedSpan[];
  /** The spans of one trace received so far. */
  trace(traceId: string): readonly ReceivedSpan[];
  /** Export requests received so far, answered or not, malformed ones included. */
  requests(): number;
  /** Requests that could not be decoded, with why: a test should expect none. */
  rejected(): readonly string[];
  /** Forgets what was received. */
  reset(): void;
  /** Closes the server and every connection, pending ones included. Idempotent. */
  stop(): Promise<void>;
}

/** Largest export accepted, bytes: the SDK sends batches of at most 512 spans. */
const MAX_BODY_BYTES = 32 * 1024 * 1024;

/**
 * Starts an OTLP/HTTP trace receiver on 127.0.0.1: POST /v1/traces with
 * `application/x-protobuf` or `application/json` bodies (gzip allowed),
 * answered with an empty ExportTraceServiceResponse. Anything else gets
 * 404, 405 or 415, and an undecodable body 400, as a collector would.
 *
 * @throws Error when the port cannot be bound.
 */
export async function startOtlpReceiver(options: OtlpReceiverOptions = {}): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  const rejected: string[] = [];
  let requests = 0;
  const answer = options.answer ?? true;

  const reply = (response: ServerResponse, status: number, contentType: string, body: string | Uint8Array) => {
    response.writeHead(status, { 'content-type': contentType });
    response.end(body);
  };
  const refuse = (response: ServerResponse, status: number, message: string) => {
    rejected.push(message);
    // A google.rpc.Status in JSON, as the collector answers errors.
    reply(response, status, 'application/json', JSON.stringify({ code: 3, message }));
  };

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://receiver');
    if (url.pathname !== '/v1/traces') return reply(response, 404, 'text/plain', 'only /v1/traces is served here');
    if (request.method !== 'POST') return reply(response, 405, 'text/plain', 'POST an ExportTraceServiceRequest');
    requests += 1;
    let body = await readBody(request);
    if (!answer) return; // hangs: the exporter's own timeout has to end the request
    if (body === undefined) return refuse(response, 413, `body over ${MAX_BODY_BYTES} bytes`);
    const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    try {
      if ((request.headers['content-encoding'] ?? '').toLowerCase() === 'gzip') body = gunzipSync(body);
      if (type === 'application/x-protobuf') {
        received.push(...decodeProtobufRequest(body));
        return reply(response, 200, 'application/x-protobuf', new Uint8Array());
      }
      if (type === 'application/json') {
        received.push(...decodeJsonRequest(JSON.parse(body.toString('utf8')) as unknown));
        return reply(response, 200, 'application/json', '{}');
      }
    } catch (error) {
      return refuse(response, 400, `undecodable ${type} export: ${(error as Error).message}`);
    }
    return refuse(response, 415, `content-type ${type || '(none)'}: send application/x-protobuf or application/json`);
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) refuse(response, 500, (error as Error).message);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  let stopped: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    spans: () => [...received],
    trace: (traceId) => received.filter((span) => span.traceId === traceId),
    requests: () => requests,
    rejected: () => [...rejected],
    reset: () => {
      received.length = 0;
      rejected.length = 0;
      requests = 0;
    },
    stop: () =>
      (stopped ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}

/** The whole body, or undefined when it is over MAX_BODY_BYTES (the rest is drained). */
async function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
  }
  return size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks);
}

// --- protobuf: opentelemetry/proto/collector/trace/v1/trace_service.proto and the messages it uses.

/** One field of a protobuf message: its number and raw value (varint or fixed as bigint, length-delimited as bytes). */
interface Field {
  readonly number: number;
  readonly value: bigint | Uint8Array;
}

/** The fields of one message, in order, by the wire format alone. */
function fieldsOf(bytes: Uint8Array): Field[] {
  const fields: Field[] = [];
  let offset = 0;
  const varint = (): bigint => {
    let result = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (offset >= bytes.length) throw new Error('truncated varint');
      const byte = bytes[offset++] as number;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      if (shift > 63n) throw new Error('varint longer than 64 bits');
    }
  };
  const fixed = (size: number): bigint => {
    if (offset + size > bytes.length) throw new Error(`truncated fixed${size * 8}`);
    let result = 0n;
    for (let index = size - 1; index >= 0; index--) result = (result << 8n) | BigInt(bytes[offset + index] as number);
    offset += size;
    return result;
  };
  while (offset < bytes.length) {
    const key = varint();
    const number = Number(key >> 3n);
    const wireType = Number(key & 7n);
    if (wireType === 0) fields.push({ number, value: varint() });
    else if (wireType === 1) fields.push({ number, value: fixed(8) });
    else if (wireType === 5) fields.push({ number, value: fixed(4) });
    else if (wireType === 2) {
      const length = Number(varint());
      if (offset + length > bytes.length) throw new Error(`field ${number} is ${length} bytes, past the end of its message`);
      fields.push({ number, value: bytes.subarray(offset, offset + length) });
      offset += length;
    } else throw new Error(`wire type ${wireType} (field ${number}) is not used by OTLP`);
  }
  return fields;
}

const bytesOf = (field: Field): Uint8Array => {
  if (typeof field.value === 'bigint') throw new Error(`field ${field.number} should be length-delimited`);
  return field.value;
};
const numberOf = (field: Field): bigint => {
  if (typeof field.value !== 'bigint') throw new Error(`field ${field.number} should be a number`);
  return field.value;
};
const text = (field: Field): string => Buffer.from(bytesOf(field)).toString('utf8');
const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');
const signed64 = (value: bigint): bigint => BigInt.asIntN(64, value);

function anyValueOf(bytes: Uint8Array): OtlpValue {
  const [field] = fieldsOf(bytes);
  if (field === undefined) return undefined;
  switch (field.number) {
    case 1:
      return text(field);
    case 2:
      return numberOf(field) !== 0n;
    case 3: {
      const value = signed64(numberOf(field));
      return Number.isSafeInteger(Number(value)) ? Number(value) : value;
    }
    case 4:
      return new Float64Array(new BigUint64Array([numberOf(field)]).buffer)[0] as number;
    case 5:
      return fieldsOf(bytesOf(field))
        .filter((value) => value.number === 1)
        .map((value) => anyValueOf(bytesOf(value)));
    case 6:
      return keyValuesOf(fieldsOf(bytesOf(field)).filter((value) => value.number === 1));
    case 7:
      return new Uint8Array(bytesOf(field));
    default:
      throw new Error(`AnyValue field ${field.number} is not in OTLP`);
  }
}

function keyValuesOf(fields: readonly Field[]): Record<string, OtlpValue> {
  const result: Record<string, OtlpValue> = {};
  for (const field of fields) {
    let key = '';
    let value: OtlpValue;
    for (const part of fieldsOf(bytesOf(field))) {
      if (part.number === 1) key = text(part);
      else if (part.number === 2) value = anyValueOf(bytesOf(part));
    }
    result[key] = value;
  }
  return result;
}

function decodeProtobufRequest(body: Uint8Array): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of fieldsOf(body).filter((field) => field.number === 1)) {
    const parts = fieldsOf(bytesOf(resourceSpans));
    const resourceField = parts.find((field) => field.number === 1);
    const resource = resourceField === undefined ? {} : keyValuesOf(fieldsOf(bytesOf(resourceField)).filter((field) => field.number === 1));
    for (const scopeSpans of parts.filter((field) => field.number === 2)) {
      for (const spanField of fieldsOf(bytesOf(scopeSpans)).filter((field) => field.number === 2)) spans.push(protobufSpan(fieldsOf(bytesOf(spanField)), resource));
    }
  }
  return spans;
}

function protobufSpan(fields: readonly Field[], resource: Record<string, OtlpValue>): ReceivedSpan {
  let traceId = '';
  let spanId = '';
  let parentSpanId: string | undefined;
  let name = '';
  let kind = 0;
  let start = 0n;
  let end = 0n;
  const attributes: Field[] = [];
  const links: { traceId: string; spanId: string }[] = [];
  let status = { code: 0, message: '' };
  for (const field of fields) {
    switch (field.number) {
      case 1:
        traceId = hex(bytesOf(field));
        break;
      case 2:
        spanId = hex(bytesOf(field));
        break;
      case 4:
        parentSpanId = bytesOf(field).length === 0 ? undefined : hex(bytesOf(field));
        break;
      case 5:
        name = text(field);
        break;
      case 6:
        kind = Number(numberOf(field));
        break;
      case 7:
        start = numberOf(field);
        break;
      case 8:
        end = numberOf(field);
        break;
      case 9:
        attributes.push(field);
        break;
      case 13: {
        const link = fieldsOf(bytesOf(field));
        const id = (number: number) => hex(bytesOf(link.find((part) => part.number === number) ?? { number, value: new Uint8Array() }));
        links.push({ traceId: id(1), spanId: id(2) });
        break;
      }
      case 15:
        for (const part of fieldsOf(bytesOf(field))) {
          if (part.number === 2) status = { ...status, message: text(part) };
          else if (part.number === 3) status = { ...status, code: Number(numberOf(part)) };
        }
        break;
      default:
        break; // trace state, flags, events, dropped counts: not needed by tests
    }
  }
  return { traceId, spanId, parentSpanId, name, kind, serviceName: stringOf(resource['service.name']), resource, attributes: keyValuesOf(attributes), links, status, startTimeUnixNano: start, endTimeUnixNano: end };
}

// --- JSON: the OTLP/JSON mapping (ids in hex, 64-bit integers possibly as strings).

type Json = Record<string, unknown>;

const arrayOf = (value: unknown): Json[] => (Array.isArray(value) ? (value as Json[]) : []);
const stringOf = (value: unknown): string => (typeof value === 'string' ? value : '');

function jsonAnyValue(value: Json | undefined): OtlpValue {
  if (value === undefined) return undefined;
  if ('stringValue' in value) return stringOf(value['stringValue']);
  if ('boolValue' in value) return value['boolValue'] === true;
  if ('intValue' in value) {
    const integer = BigInt(value['intValue'] as string | number);
    return Number.isSafeInteger(Number(integer)) ? Number(integer) : integer;
  }
  if ('doubleValue' in value) return Number(value['doubleValue']);
  if ('arrayValue' in value) return arrayOf((value['arrayValue'] as Json | undefined)?.['values']).map((item) => jsonAnyValue(item));
  if ('kvlistValue' in value) return jsonKeyValues((value['kvlistValue'] as Json | undefined)?.['values']);
  if ('bytesValue' in value) return new Uint8Array(Buffer.from(stringOf(value['bytesValue']), 'base64'));
  return undefined;
}

function jsonKeyValues(list: unknown): Record<string, OtlpValue> {
  return Object.fromEntries(arrayOf(list).map((pair) => [stringOf(pair['key']), jsonAnyValue(pair['value'] as Json | undefined)]));
}

function decodeJsonRequest(body: unknown): ReceivedSpan[] {
  if (typeof body !== 'object' || body === null) throw new Error('the body is not a JSON object');
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of arrayOf((body as Json)['resourceSpans'])) {
    const resource = jsonKeyValues((resourceSpans['resource'] as Json | undefined)?.['attributes']);
    for (const scopeSpans of arrayOf(resourceSpans['scopeSpans'])) {
      for (const span of arrayOf(scopeSpans['spans'])) {
        const status = (span['status'] ?? {}) as Json;
        const parent = stringOf(span['parentSpanId']);
        spans.push({
          traceId: stringOf(span['traceId']).toLowerCase(),
          spanId: stringOf(span['spanId']).toLowerCase(),
          parentSpanId: parent === '' ? undefined : parent.toLowerCase(),
          name: stringOf(span['name']),
          kind: Number(span['kind'] ?? 0),
          serviceName: stringOf(resource['service.name']),
          resource,
          attributes: jsonKeyValues(span['attributes']),
          links: arrayOf(span['links']).map((link) => ({ traceId: stringOf(link['traceId']).toLowerCase(), spanId: stringOf(link['spanId']).toLowerCase() })),
          status: { code: Number(status['code'] ?? 0), message: stringOf(status['message']) },
          startTimeUnixNano: BigInt((span['startTimeUnixNano'] as string | number | undefined) ?? 0),
          endTimeUnixNano: BigInt((span['endTimeUnixNano'] as string | number | undefined) ?? 0),
        });
      }
    }
  }
  return spans;
}
