import { describe, expect, it } from '@jest/globals';
import { ErrorCode } from '@ratchet/errors';
import { hashToken, LOCAL_PRINCIPAL, newToken, PrincipalDirectory, requireRole, Role } from '../src';

const entries = [
  { name: 'ana', team: 'payments', roles: [Role.SUBMITTER, Role.APPROVER], tokenSha256: hashToken('ana-token') },
  { name: 'bo', team: 'web', roles: [Role.VIEWER], tokenSha256: hashToken('bo-token').toUpperCase(), certificateName: 'bo.web.example' },
];

describe('PrincipalDirectory', () => {
  const directory = new PrincipalDirectory(entries);

  it('finds a principal by its token, or by its certificate name when no token is given', () => {
    expect(directory.authenticate({ token: 'ana-token', certificateNames: [] })).toMatchObject({ name: 'ana', team: 'payments', authenticated: true });
    expect(directory.authenticate({ token: 'bo-token', certificateNames: [] }).name).toBe('bo');
    expect(directory.authenticate({ certificateNames: ['other', 'bo.web.example'] }).name).toBe('bo');
  });

  it('refuses a wrong token even with a known certificate, and a call with neither', () => {
    expect(() => directory.authenticate({ token: 'guess', certificateNames: ['bo.web.example'] })).toThrow(expect.objectContaining({ code: ErrorCode.UNAUTHENTICATED, message: expect.stringMatching(/not valid/) }));
    expect(() => directory.authenticate({ certificateNames: [] })).toThrow(expect.objectContaining({ code: ErrorCode.UNAUTHENTICATED, message: expect.stringMatching(/needs a token/) }));
    expect(() => directory.authenticate({ certificateNames: ['stranger'] })).toThrow(expect.objectContaining({ code: ErrorCode.UNAUTHENTICATED, message: expect.stringMatching(/stranger/) }));
  });

  it('refuses a users list it cannot trust: duplicate names, tokens or certificates, bad hashes, no credential', () => {
    const bad = (list: ConstructorParameters<typeof PrincipalDirectory>[0], pattern: RegExp) => expect(() => new PrincipalDirectory(list)).toThrow(expect.objectContaining({ code: ErrorCode.CONFIG_INVALID, message: expect.stringMatching(pattern) }));
    bad([entries[0]!, { ...entries[1]!, name: 'ana' }], /listed twice/);
    bad([entries[0]!, { ...entries[1]!, tokenSha256: hashToken('ana-token') }], /same token/);
    bad([entries[1]!, { name: 'cy', team: 'web', roles: [Role.VIEWER], certificateName: 'bo.web.example' }], /belongs to another user/);
    bad([{ name: 'cy', team: 'web', roles: [Role.VIEWER], tokenSha256: 'ana-token' }], /not a SHA-256/);
    bad([{ name: 'cy', team: 'web', roles: [Role.VIEWER] }], /neither tokenSha256 nor certificateName/);
  });

  it('makes tokens that are long, random and match their hash', () => {
    const first = newToken();
    const second = newToken();
    expect(first.token).not.toBe(second.token);
    expect(first.token.length).toBeGreaterThanOrEqual(40);
    expect(first.sha256).toBe(hashToken(first.token));
    expect(new PrincipalDirectory([{ name: 'n', team: 't', roles: [Role.VIEWER], tokenSha256: first.sha256 }]).authenticate({ token: first.token, certificateNames: [] }).name).toBe('n');
  });
});

describe('requireRole', () => {
  const principal = (roles: Role[]) => ({ name: 'p', team: 't', roles: new Set(roles), authenticated: true });

  it('lets every role read, each role do its own, and admin do everything', () => {
    expect(() => requireRole(principal([Role.APPROVER]), Role.VIEWER, 'read')).not.toThrow();
    expect(() => requireRole(principal([Role.SUBMITTER]), Role.SUBMITTER, 'submit')).not.toThrow();
    expect(() => requireRole(principal([Role.ADMIN]), Role.APPROVER, 'approve')).not.toThrow();
    expect(() => requireRole(LOCAL_PRINCIPAL, Role.ADMIN, 're-index')).not.toThrow();
  });

  it('refuses what a role does not allow, naming the role it needs', () => {
    expect(() => requireRole(principal([Role.SUBMITTER]), Role.APPROVER, 'decide approval gates')).toThrow(
      expect.objectContaining({ code: ErrorCode.PERMISSION_DENIED, message: 'p may not decide approval gates: that needs the approver role in team t; ask an operator to add it in the users file' }),
    );
    expect(() => requireRole(principal([Role.VIEWER]), Role.SUBMITTER, 'submit tasks')).toThrow(expect.objectContaining({ code: ErrorCode.PERMISSION_DENIED }));
    expect(() => requireRole(principal([]), Role.VIEWER, 'read tasks')).toThrow(expect.objectContaining({ code: ErrorCode.PERMISSION_DENIED }));
  });
});
