import { describe, expect, it } from 'vitest';
import { uiCodecEndpoint } from '../../tools/stack/ui-codec.js';

describe('STACK_UI_CODEC_ENDPOINT', () => {
  it('is the codec server URL the Web UI is given, or undefined when unset', () => {
    expect(uiCodecEndpoint({})).toBeUndefined();
    expect(uiCodecEndpoint({ STACK_UI_CODEC_ENDPOINT: ' ' })).toBeUndefined();
    expect(uiCodecEndpoint({ STACK_UI_CODEC_ENDPOINT: 'http://127.0.0.1:8888/' })).toBe('http://127.0.0.1:8888');
    expect(uiCodecEndpoint({ STACK_UI_CODEC_ENDPOINT: 'https://codec.example.com/ns' })).toBe(
      'https://codec.example.com/ns',
    );
  });

  it('refuses anything but an http(s) URL, saying what was expected', () => {
    expect(() => uiCodecEndpoint({ STACK_UI_CODEC_ENDPOINT: '127.0.0.1:8888' })).toThrow(
      'STACK_UI_CODEC_ENDPOINT must be an http:// or https:// URL of the codec server (e.g. http://127.0.0.1:8888), got "127.0.0.1:8888"',
    );
    expect(() => uiCodecEndpoint({ STACK_UI_CODEC_ENDPOINT: 'ftp://x' })).toThrow(/must be an http/);
  });
});
