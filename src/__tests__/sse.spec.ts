import { SseParser, ISseMessage } from '../api/sse';

const STREAM =
  'retry: 2000\nevent: hello\ndata: {"type":"hello"}\n\n' +
  ': keep-alive\n\n' +
  'event: step\r\ndata: {"a":\r\ndata: "é🙂"}\r\nid: 7\r\n\r\n' +
  'data: no name\r\r' +
  'event: ignored-without-data\n\n';

const EXPECTED: ISseMessage[] = [
  { event: 'hello', data: '{"type":"hello"}', id: '' },
  { event: 'step', data: '{"a":\n"é🙂"}', id: '7' },
  { event: 'message', data: 'no name', id: '7' }
];

function feedAll(parser: SseParser, chunks: Array<string | Uint8Array>) {
  const out: ISseMessage[] = [];
  for (const chunk of chunks) {
    out.push(...parser.push(chunk));
  }
  return out;
}

describe('SseParser', () => {
  it('parses a whole stream', () => {
    const parser = new SseParser();
    expect(parser.push(STREAM)).toEqual(EXPECTED);
    expect(parser.retry).toBe(2000);
  });

  it('gives the same messages whatever the split of the text', () => {
    for (let cut = 0; cut <= STREAM.length; cut++) {
      const parser = new SseParser();
      const messages = feedAll(parser, [
        STREAM.slice(0, cut),
        STREAM.slice(cut)
      ]);
      expect(messages).toEqual(EXPECTED);
    }
  });

  it('gives the same messages fed one character at a time', () => {
    const parser = new SseParser();
    expect(feedAll(parser, Array.from(STREAM))).toEqual(EXPECTED);
  });

  it('decodes UTF-8 bytes split inside a character', () => {
    const bytes = new TextEncoder().encode(STREAM);
    for (let cut = 0; cut <= bytes.length; cut += 3) {
      const parser = new SseParser();
      const messages = feedAll(parser, [
        bytes.slice(0, cut),
        bytes.slice(cut, cut + 1),
        bytes.slice(cut + 1)
      ]);
      expect(messages).toEqual(EXPECTED);
    }
  });

  it('takes an LF after a CR ending a chunk as one line break', () => {
    const parser = new SseParser();
    expect(parser.push('data: x\r')).toEqual([]);
    expect(parser.push('\n\r')).toEqual([
      { event: 'message', data: 'x', id: '' }
    ]);
    // The LF completes the CRLF: no extra blank line, no second message.
    expect(parser.push('\ndata: y\n')).toEqual([]);
    expect(parser.push('\n')).toEqual([
      { event: 'message', data: 'y', id: '' }
    ]);
  });

  it('keeps a field without colon and strips one space only', () => {
    const parser = new SseParser();
    expect(parser.push('data\ndata:  two\n\n')).toEqual([
      { event: 'message', data: '\n two', id: '' }
    ]);
  });

  it('stays linear on a long line arriving in many chunks', () => {
    const parser = new SseParser();
    const chunk = 'x'.repeat(1000);
    const started = Date.now();
    parser.push('data: ');
    for (let i = 0; i < 2000; i++) {
      expect(parser.push(chunk)).toEqual([]);
    }
    const [message] = parser.push('\n\n');
    expect(message.data).toHaveLength(2_000_000);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('forgets a partial message on reset', () => {
    const parser = new SseParser();
    parser.push('event: step\ndata: half');
    parser.reset();
    expect(parser.push('\ndata: y\n\n')).toEqual([
      { event: 'message', data: 'y', id: '' }
    ]);
  });
});
