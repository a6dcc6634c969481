import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { queueKeyOf } from '../src/url/queue-key.js';
import { DATA_FILES, sharedUrls } from './helpers/data.js';

describe('queue keys', () => {
  it('host mode agrees with the WHATWG parser on every real URL', () => {
    let checked = 0;
    for (const file of DATA_FILES) {
      for (const url of sharedUrls(file)) {
        let expected: string | undefined;
        try {
          const parsed = new URL(url);
          expected = parsed.hostname === '' ? undefined : parsed.host;
        } catch {
          expected = undefined;
        }
        assert.equal(queueKeyOf(url, 'host'), expected, url);
        checked++;
      }
    }
    assert.ok(checked > 40_000, `checked ${checked} URLs`);
  });

  it('host mode: case, userinfo, default and other ports, IPv6, IDN, percent-escapes', () => {
    const cases: [string, string | undefined][] = [
      ['HTTP://WWW.Example.COM/a', 'www.example.com'],
      ['https://user:pw@example.com:443/x', 'example.com'],
      ['http://example.com:80', 'example.com'],
      ['http://example.com:8080/?q', 'example.com:8080'],
      ['https://example.com:080/', 'example.com:80'],
      ['http://example.com:/p', 'example.com'],
      ['http://[2001:DB8::1]:8443/', '[2001:db8::1]:8443'],
      ['http://[::1]/', '[::1]'],
      ['http://bücher.example/', 'xn--bcher-kva.example'],
      ['http://ex%61mple.com/', 'example.com'],
      ['http://example.com\\path', 'example.com'],
      ['http://a@b@example.com/', 'example.com'],
      ['http://example.com:99999/', undefined],
      ['http://example.com:8a/', undefined],
      ['mailto:someone@example.com', undefined],
      ['/relative/path', undefined],
      ['not a url at all', undefined],
      ['file:///etc/passwd', undefined],
      ['', undefined],
    ];
    for (const [url, key] of cases) assert.equal(queueKeyOf(url, 'host'), key, url);
  });

  it('domain mode: registrable domains by the Public Suffix List, private section included', () => {
    const cases: [string, string | undefined][] = [
      ['https://news.example.co.uk/a', 'example.co.uk'],
      ['https://www.example.co.uk:8443/a', 'example.co.uk'],
      ['https://a.github.io/', 'a.github.io'],
      ['https://b.github.io/', 'b.github.io'],
      ['http://127.0.0.1:9000/', '127.0.0.1'],
      ['http://localhost/', 'localhost'],
      ['mailto:x@example.com', undefined],
    ];
    for (const [url, key] of cases) assert.equal(queueKeyOf(url, 'domain'), key, url);
  });

  it('none mode: one queue', () => {
    assert.equal(queueKeyOf('https://a.example/', 'none'), '');
    assert.equal(queueKeyOf('anything', 'none'), '');
  });
});
