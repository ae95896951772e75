import { describe, expect, it } from '@jest/globals';
import { allowedHostSchema, requestSourcePolicy, type RequestSource } from './request-source';

const loopbackOnly = requestSourcePolicy({ defaultPort: 80 });
const withIngress = requestSourcePolicy({ defaultPort: 80, allowedHosts: ['Ratchet.Example.com', 'tunnel.internal:8443'] });

const request = (fields: Partial<RequestSource>): RequestSource => ({ method: 'GET', url: '/api/tasks', host: '127.0.0.1:8080', origin: undefined, secFetchSite: undefined, ...fields });

describe('which requests the dashboard answers', () => {
  it('answers loopback names with any port, and no other name by default', () => {
    for (const host of ['127.0.0.1:8080', 'localhost:8080', 'LOCALHOST:1', '[::1]:8080', 'localhost', '127.0.0.1', 'localhost.:8080']) expect([host, loopbackOnly.allowsHost(host)]).toEqual([host, true]);
    for (const host of ['evil.example', 'evil.example:8080', 'localhost.evil.example:8080', '127.0.0.1.nip.io:8080', '10.0.0.4:8080', '', 'localhost:8080:1', 'user@localhost']) expect([host, loopbackOnly.allowsHost(host)]).toEqual([host, false]);
  });

  it('answers configured names, case-insensitively, with any port or the one given', () => {
    for (const host of ['ratchet.example.com', 'ratchet.example.com:443', 'RATCHET.example.com', 'tunnel.internal:8443', 'localhost:3000']) expect([host, withIngress.allowsHost(host)]).toEqual([host, true]);
    for (const host of ['tunnel.internal', 'tunnel.internal:8080', 'example.com', 'x.ratchet.example.com']) expect([host, withIngress.allowsHost(host)]).toEqual([host, false]);
    // A Host without a port means the scheme's: 443 with TLS.
    expect(requestSourcePolicy({ defaultPort: 443, allowedHosts: ['tunnel.internal:443'] }).allowsHost('tunnel.internal')).toBe(true);
  });

  it('refuses another name with 421, naming the names and the setting that adds one (DNS rebinding)', () => {
    const refusal = loopbackOnly.refusalOf(request({ method: 'POST', host: 'evil.example:8080', origin: 'http://evil.example:8080', secFetchSite: 'same-origin' }));
    expect(refusal).toEqual({
      status: 421,
      code: 'PERMISSION_DENIED',
      message: 'this dashboard answers to localhost, 127.0.0.1, [::1] only, not to the name "evil.example:8080": if people open it by that name, add the name to web.allowedHosts in config/web.yaml (or RATCHET_WEB_ALLOWED_HOSTS, comma-separated)',
    });
    expect(loopbackOnly.refusalOf(request({ host: undefined }))?.status).toBe(421);
    expect(requestSourcePolicy({ defaultPort: 80, setting: 'web.allowedHosts in cli.yaml' }).refusalOf(request({ host: 'evil.example' }))?.message).toMatch(/add the name to web\.allowedHosts in cli\.yaml$/);
  });

  it("refuses with 403 what another site's page sends, by its Origin or Sec-Fetch-Site", () => {
    const crossOrigin = loopbackOnly.refusalOf(request({ method: 'POST', origin: 'http://evil.example' }));
    expect(crossOrigin).toMatchObject({ status: 403, code: 'PERMISSION_DENIED' });
    expect(crossOrigin?.message).toMatch(/^requests from pages of http:\/\/evil\.example are refused: use the dashboard itself/);
    // A read from another site's script too; `null` (a sandboxed page) and non-http origins are another site.
    expect(loopbackOnly.refusalOf(request({ origin: 'http://evil.example' }))?.status).toBe(403);
    expect(loopbackOnly.refusalOf(request({ method: 'POST', origin: 'null' }))?.status).toBe(403);
    expect(loopbackOnly.refusalOf(request({ method: 'POST', origin: 'file://' }))?.status).toBe(403);
    // Another port of this machine is another origin: it may not change anything here.
    expect(loopbackOnly.refusalOf(request({ method: 'POST', host: 'localhost:8080', origin: 'http://localhost:3000' }))?.status).toBe(403);
    // Without an Origin, a browser's Sec-Fetch-Site still says where it comes from.
    expect(loopbackOnly.refusalOf(request({ method: 'POST', secFetchSite: 'cross-site' }))?.status).toBe(403);
    expect(loopbackOnly.refusalOf(request({ method: 'GET', secFetchSite: 'same-site' }))?.message).toBe("a same-site request to the dashboard's API is refused: use the dashboard itself");
  });

  it("answers the dashboard's own pages, programs that send no Origin, and links from elsewhere to its pages", () => {
    expect(loopbackOnly.refusalOf(request({ method: 'POST', host: 'localhost:8080', origin: 'http://localhost:8080', secFetchSite: 'same-origin' }))).toBeUndefined();
    expect(withIngress.refusalOf(request({ method: 'POST', host: 'ratchet.example.com', origin: 'https://ratchet.example.com', secFetchSite: 'same-origin' }))).toBeUndefined();
    expect(loopbackOnly.refusalOf(request({ method: 'POST' }))).toBeUndefined();
    expect(loopbackOnly.refusalOf(request({ url: '/tasks/t-1', secFetchSite: 'cross-site' }))).toBeUndefined();
    expect(loopbackOnly.refusalOf(request({ url: '/', secFetchSite: 'none' }))).toBeUndefined();
  });

  it('accepts host names with an optional port as allowed hosts, and nothing else', () => {
    for (const entry of ['ratchet.example.com', 'ratchet.internal:8443', 'localhost', '[fd00::1]:8080', '10.0.0.4']) expect([entry, allowedHostSchema.safeParse(entry).success]).toEqual([entry, true]);
    for (const entry of ['https://ratchet.example.com', 'ratchet.example.com/', '*.example.com', 'ratchet.example.com:99999', '', 'a b']) expect([entry, allowedHostSchema.safeParse(entry).success]).toEqual([entry, false]);
  });
});
