import { describe, expect, it } from '@jest/globals';
import { AppError, ErrorCode } from '@ratchet/errors';
import { httpFailureOf, httpStatusOfCode, requestErrorOf, signInMessage, tokenRefusedMessage, unavailableMessage } from './http-errors';

describe('httpFailureOf', () => {
  it('gives every error code a status, and keeps the code and message', () => {
    for (const code of Object.values(ErrorCode)) expect([code, httpStatusOfCode[code]]).toEqual([code, expect.any(Number)]);
    expect(httpFailureOf(new AppError(ErrorCode.NOT_FOUND, 'no task abc'), true)).toEqual({ status: 404, body: { error: { code: 'NOT_FOUND', message: 'no task abc' } } });
    expect(httpFailureOf(new AppError(ErrorCode.PERMISSION_DENIED, 'ana may not submit tasks'), true).status).toBe(403);
    expect(httpFailureOf(new AppError(ErrorCode.UNIMPLEMENTED, 'Answer is not served here'), true).status).toBe(501);
    expect(httpFailureOf(new AppError(ErrorCode.UNAVAILABLE, 'the Ratchet server at o:50051 is not reachable; check --server / RATCHET_SERVER'), true)).toEqual({ status: 503, body: { error: { code: 'UNAVAILABLE', message: unavailableMessage } } });
  });

  it('says UNAUTHENTICATED for a browser: sign in, or sign in again', () => {
    const cliWords = new AppError(ErrorCode.UNAUTHENTICATED, 'the token is not valid for this server; check --token / RATCHET_TOKEN');
    expect(httpFailureOf(cliWords, false)).toEqual({ status: 401, body: { error: { code: 'UNAUTHENTICATED', message: 'sign in: this dashboard needs your Ratchet token (an operator makes one with `ratchet token`)' } } });
    expect(httpFailureOf(cliWords, true).body.error.message).toBe('the token was refused: sign in again with a valid Ratchet token (an operator makes one with `ratchet token`)');
    expect(httpFailureOf(cliWords, true, 'open the address `ratchet ui` printed').body.error.message).toBe(tokenRefusedMessage('open the address `ratchet ui` printed'));
    expect(signInMessage('x')).toBe('sign in: this dashboard needs your Ratchet token (x)');
  });

  it('keeps the detail of an unexpected error out of the answer', () => {
    expect(httpFailureOf(new TypeError('x is undefined at /srv/app.js:12'), true)).toEqual({ status: 500, body: { error: { code: 'INTERNAL', message: "internal error; the dashboard's log has the details" } } });
  });
});

describe('requestErrorOf', () => {
  it("turns fastify's body errors into INVALID_ARGUMENT or RESOURCE_EXHAUSTED, and leaves others alone", () => {
    expect(requestErrorOf({ code: 'FST_ERR_CTP_INVALID_JSON_BODY', statusCode: 400, message: 'Body is not valid JSON but content-type is set to \'application/json\'' }, 1024)?.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(requestErrorOf({ code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 }, 1024)).toMatchObject({ code: ErrorCode.RESOURCE_EXHAUSTED, message: 'the request body is over 1024 bytes, the most this dashboard takes' });
    expect(requestErrorOf({ code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415 }, 1024)?.message).toBe('send the request body as JSON, with Content-Type: application/json');
    expect(requestErrorOf(new AppError(ErrorCode.NOT_FOUND, 'x'), 1024)).toBeUndefined();
    expect(requestErrorOf(new Error('boom'), 1024)).toBeUndefined();
  });
});
