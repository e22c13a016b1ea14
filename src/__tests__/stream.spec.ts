import type { LiveEvent } from '../api/records';
import { ConnectionState, EventStream } from '../api/stream';

/**
 * A response whose body yields the given chunks, then ends.
 */
function streamResponse(chunks: string[]): Response {
  const encoder = new TextEncoder();
  const queue = chunks.map(chunk => encoder.encode(chunk));
  const reader = {
    read: async () => {
      const value = queue.shift();
      return value ? { done: false, value } : { done: true, value: undefined };
    }
  };
  return { body: { getReader: () => reader } } as unknown as Response;
}

function waitFor(check: () => boolean, timeout = 2000): Promise<void> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const poll = () => {
      if (check()) {
        resolve();
      } else if (Date.now() - started > timeout) {
        reject(new Error('timed out'));
      } else {
        setTimeout(poll, 5);
      }
    };
    poll();
  });
}

const HELLO = 'event: hello\ndata: {"type":"hello"}\n\n';
const STEP =
  'event: step\ndata: {"type":"step","trajectory_id":"t","kernel_id":"k",' +
  '"notebook_path":"n","step":{"step":1,"code":"x"}}\n\n';

describe('EventStream', () => {
  beforeEach(() => {
    jest.spyOn(console, 'debug').mockImplementation(() => undefined);
  });

  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('parses events across chunks and reconnects when the stream ends', async () => {
    const events: LiveEvent[] = [];
    const states: ConnectionState[] = [];
    let opened = 0;
    const stream = new EventStream({
      open: async () => {
        opened++;
        const text = HELLO + STEP;
        return streamResponse([
          text.slice(0, 30),
          text.slice(30, 101),
          text.slice(101)
        ]);
      },
      onEvent: event => events.push(event),
      onState: state => states.push(state),
      backoff: { initial: 10, max: 40 }
    });
    stream.start();
    await waitFor(() => opened >= 2 && events.length >= 4);
    stream.dispose();
    expect(events.slice(0, 2).map(e => e.type)).toEqual(['hello', 'step']);
    // A stream that ends after its hello is healthy: no alarm on reconnection.
    expect(states).toEqual(['connecting', 'open', 'closed']);
    expect(stream.state).toBe('closed');
  });

  it('backs off while the server fails', async () => {
    const times: number[] = [];
    const states: ConnectionState[] = [];
    const stream = new EventStream({
      open: async () => {
        times.push(Date.now());
        throw new Error('down');
      },
      onEvent: () => undefined,
      onState: state => states.push(state),
      backoff: { initial: 20, max: 80 }
    });
    stream.start();
    await waitFor(() => times.length >= 4);
    stream.dispose();
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    expect(gaps[0]).toBeGreaterThanOrEqual(15);
    expect(gaps[2]).toBeGreaterThanOrEqual(gaps[0]);
    expect(states).toEqual(['connecting', 'retrying', 'closed']);
  });

  it('stops reading once disposed', async () => {
    let signal: AbortSignal | null = null;
    const stream = new EventStream({
      open: s => {
        signal = s;
        return new Promise<Response>(() => undefined);
      },
      onEvent: () => undefined
    });
    stream.start();
    await waitFor(() => signal !== null);
    stream.dispose();
    expect(signal!.aborted).toBe(true);
  });
});
