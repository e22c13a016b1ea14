/**
 * The live events of every notebook, read from jupyter_server's event bus
 * through JupyterLab's EventManager (`app.serviceManager.events`): one
 * WebSocket for the whole page, reconnected by JupyterLab.
 *
 * The EventManager does not say when its socket drops or comes back, so the
 * server numbers its events (`seq`) and sends a heartbeat every few seconds:
 * a number that does not follow the last one seen (or the first one seen)
 * means events were missed, and `missed` asks the stores to read what they
 * lack from the REST API; no heartbeat for a while means the connection is
 * down (`state` 'retrying').
 */
import type { Event } from '@jupyterlab/services';
import { Debouncer } from '@lumino/polling';
import { type ISignal, Signal } from '@lumino/signaling';

import { readLiveEvent } from '../api/readers';
import { LIVE_EVENT_SCHEMA_ID, type LiveEvent } from '../api/records';
import type { ConnectionState } from './types';

/**
 * Heartbeats that may go missing before the connection counts as down (a
 * busy server or a hidden tab delays them).
 */
export const MISSED_HEARTBEATS = 2.5;

/**
 * Seconds between heartbeats assumed until the server's first one says.
 */
const DEFAULT_EVERY = 10;

export class LiveEventFeed {
  constructor(private readonly _events: Event.IManager) {
    this._events.stream.connect(this._onEmission, this);
    this._watchdog = this._makeWatchdog(DEFAULT_EVERY);
  }

  /**
   * 'connecting' until the first event, 'open' while events come,
   * 'retrying' once heartbeats stopped coming.
   */
  get state(): ConnectionState {
    return this._state;
  }

  get stateChanged(): ISignal<LiveEventFeed, ConnectionState> {
    return this._stateChanged;
  }

  /**
   * Every live event, in the server's order.
   */
  get received(): ISignal<LiveEventFeed, LiveEvent> {
    return this._received;
  }

  /**
   * Events were missed (or none was seen before): read what happened from
   * the REST API. Emitted before the event that revealed it.
   */
  get missed(): ISignal<LiveEventFeed, void> {
    return this._missed;
  }

  dispose(): void {
    this._events.stream.disconnect(this._onEmission, this);
    this._watchdog.dispose();
    Signal.clearData(this);
  }

  private _onEmission(_: unknown, emission: Event.Emission): void {
    if (emission.schema_id !== LIVE_EVENT_SCHEMA_ID) {
      return; // jupyter_server's own events, other extensions'
    }
    const event = liveEvent(emission);
    if (!event) {
      return;
    }
    if (event.type === 'heartbeat' && event.every * 1000 !== this._every) {
      this._watchdog.dispose();
      this._watchdog = this._makeWatchdog(event.every);
    }
    void this._watchdog.invoke();
    this._setState('open');
    // A server that restarted counts from 1 again: any other number than the
    // next one is a gap.
    const gap = this._last === null || event.seq !== this._last + 1;
    this._last = event.seq;
    if (gap) {
      this._missed.emit();
    }
    if (event.type !== 'heartbeat') {
      this._received.emit(event);
    }
  }

  private _makeWatchdog(every: number): Debouncer {
    this._every = every * 1000;
    return new Debouncer(
      () => this._setState('retrying'),
      this._every * MISSED_HEARTBEATS
    );
  }

  private _setState(state: ConnectionState): void {
    if (state !== this._state) {
      this._state = state;
      this._stateChanged.emit(state);
    }
  }

  private _last: number | null = null;
  private _every = DEFAULT_EVERY * 1000;
  private _watchdog: Debouncer;
  private _state: ConnectionState = 'connecting';
  private _stateChanged = new Signal<LiveEventFeed, ConnectionState>(this);
  private _received = new Signal<LiveEventFeed, LiveEvent>(this);
  private _missed = new Signal<LiveEventFeed, void>(this);
}

/**
 * The live event a bus message under the live schema carries as its JSON
 * text (`LiveBusMessage`; the event manager adds its own fields beside it);
 * `null`, with a warning, for one that breaks its schema: a server bug,
 * skipped rather than shown wrong.
 */
function liveEvent(emission: Event.Emission): LiveEvent | null {
  let payload: unknown;
  try {
    payload = JSON.parse(String(emission.event));
  } catch {
    console.warn('Themisto: skipped a live event that is not JSON');
    return null;
  }
  const event = readLiveEvent(payload);
  if (!event) {
    console.warn(
      'Themisto: skipped a live event:',
      readLiveEvent.problem(payload)
    );
  }
  return event;
}
