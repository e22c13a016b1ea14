/**
 * The live stream's connection: Server-Sent Events read from an
 * authenticated fetch, parsed into typed events, reconnected with backoff.
 */
import type { IDisposable } from '@lumino/disposable';

import { parseLiveEvent } from './parse';
import type { LiveEvent } from './records';
import { SseParser } from './sse';

/**
 * State of a live connection.
 */
export type ConnectionState = 'connecting' | 'open' | 'retrying' | 'closed';

/**
 * Opens the stream; resolves to a response whose body is read as SSE.
 */
export type StreamOpener = (signal: AbortSignal) => Promise<Response>;

/**
 * Reconnection delays: doubled after each failure from `initial` up to `max`.
 */
export interface IBackoff {
  initial: number;
  max: number;
}

export const DEFAULT_BACKOFF: IBackoff = { initial: 1000, max: 30000 };

/**
 * A Server-Sent Events connection that reconnects with backoff.
 *
 * Not `EventSource`: that cannot send the Authorization header that Jupyter
 * token authentication needs, so the stream is a plain authenticated fetch
 * whose body is parsed here.
 */
export class EventStream implements IDisposable {
  constructor(options: EventStream.IOptions) {
    this._open = options.open;
    this._onEvent = options.onEvent;
    this._onState = options.onState ?? (() => undefined);
    this._backoff = options.backoff ?? DEFAULT_BACKOFF;
    this._delay = this._backoff.initial;
  }

  get state(): ConnectionState {
    return this._state;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /**
   * Connect (once; later calls do nothing).
   */
  start(): void {
    if (!this._started && !this._disposed) {
      this._started = true;
      void this._run();
    }
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._abort?.abort();
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
    this._setState('closed');
  }

  private async _run(): Promise<void> {
    while (!this._disposed) {
      if (this._state !== 'open') {
        this._setState(this._state === 'retrying' ? 'retrying' : 'connecting');
      }
      const reachedHello = await this._connect();
      if (this._disposed) {
        return;
      }
      // The server also ends healthy streams (a stalled reader, a restart of
      // its side): come straight back without alarming anyone. Only attempts
      // that fail make the state `retrying`, later and later.
      if (!reachedHello) {
        this._setState('retrying');
      }
      await this._sleep(this._delay);
      if (!reachedHello) {
        this._delay = Math.min(this._delay * 2, this._backoff.max);
      }
    }
  }

  /**
   * One connection, read until it ends; whether it got the server's hello.
   */
  private async _connect(): Promise<boolean> {
    const abort = new AbortController();
    this._abort = abort;
    const parser = new SseParser();
    let reachedHello = false;
    try {
      const response = await this._open(abort.signal);
      const body = response.body;
      if (!body) {
        throw new Error('The event stream has no body');
      }
      const reader = body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done || this._disposed) {
          break;
        }
        for (const message of parser.push(value)) {
          const event = parseLiveEvent(message.event, message.data);
          if (!event) {
            continue;
          }
          if (event.type === 'hello') {
            reachedHello = true;
            // A healthy stream resets the backoff.
            this._delay = parser.retry ?? this._backoff.initial;
            this._setState('open');
          }
          this._dispatch(event);
        }
      }
    } catch (error) {
      if (!this._disposed) {
        console.debug('themisto: event stream failed', error);
      }
    }
    return reachedHello;
  }

  private _dispatch(event: LiveEvent): void {
    try {
      this._onEvent(event);
    } catch (error) {
      console.error('themisto: live event handler failed', error);
    }
  }

  private _sleep(ms: number): Promise<void> {
    return new Promise(resolve => {
      this._timer = setTimeout(() => {
        this._timer = null;
        resolve();
      }, ms);
    });
  }

  private _setState(state: ConnectionState): void {
    if (state !== this._state) {
      this._state = state;
      this._onState(state);
    }
  }

  private _open: StreamOpener;
  private _onEvent: (event: LiveEvent) => void;
  private _onState: (state: ConnectionState) => void;
  private _backoff: IBackoff;
  private _delay: number;
  private _state: ConnectionState = 'closed';
  private _started = false;
  private _disposed = false;
  private _abort: AbortController | null = null;
  private _timer: ReturnType<typeof setTimeout> | null = null;
}

export namespace EventStream {
  export interface IOptions {
    open: StreamOpener;
    onEvent: (event: LiveEvent) => void;
    onState?: (state: ConnectionState) => void;
    backoff?: IBackoff;
  }
}
