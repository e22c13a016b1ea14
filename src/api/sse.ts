/**
 * An incremental parser of Server-Sent Events (the `text/event-stream` format
 * of the HTML standard), fed text chunks that may split anywhere: inside a
 * field, between `\r` and `\n`, or inside a UTF-8 character (bytes are
 * decoded with a streaming decoder).
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */

/**
 * One dispatched message.
 */
export interface ISseMessage {
  /**
   * The `event:` name; `message` when the server gave none.
   */
  event: string;
  /**
   * The `data:` lines joined by `\n`.
   */
  data: string;
  /**
   * The last `id:` seen, as the standard keeps it across messages.
   */
  id: string;
}

/**
 * Incremental SSE parser.
 */
export class SseParser {
  /**
   * The reconnection delay (ms) the server asked for with `retry:`, if any.
   */
  get retry(): number | null {
    return this._retry;
  }

  /**
   * Feed bytes (decoded as UTF-8, across calls) or text; returns the messages
   * completed by this chunk.
   */
  push(chunk: Uint8Array | string): ISseMessage[] {
    const text =
      typeof chunk === 'string'
        ? chunk
        : this._decoder.decode(chunk, { stream: true });
    const messages: ISseMessage[] = [];
    let start = 0;
    let i = 0;
    if (this._afterCR) {
      // The previous chunk ended with CR: an LF here completes that CRLF.
      this._afterCR = false;
      if (text.charCodeAt(0) === 10) {
        start = i = 1;
      }
    }
    for (; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) {
        continue;
      }
      // Only the new text is scanned; earlier parts of a long line wait in
      // a list and are joined once, so a line split in many chunks costs
      // linear time.
      const piece = text.slice(start, i);
      const line = this._partial.length
        ? this._partial.join('') + piece
        : piece;
      this._partial = [];
      this._line(line, messages);
      if (c === 13) {
        if (i + 1 === text.length) {
          this._afterCR = true;
        } else if (text.charCodeAt(i + 1) === 10) {
          i++;
        }
      }
      start = i + 1;
    }
    if (start < text.length) {
      this._partial.push(text.slice(start));
    }
    return messages;
  }

  /**
   * Forget any partial message (on reconnection).
   */
  reset(): void {
    this._partial = [];
    this._afterCR = false;
    this._data = [];
    this._event = '';
    this._decoder = new TextDecoder();
  }

  private _line(line: string, out: ISseMessage[]): void {
    if (line.length === 0) {
      if (this._data.length > 0) {
        out.push({
          event: this._event || 'message',
          data: this._data.join('\n'),
          id: this._id
        });
      }
      this._data = [];
      this._event = '';
      return;
    }
    if (line.charCodeAt(0) === 58 /* ':' */) {
      return; // A comment: the server's keep-alive.
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32 /* ' ' */) {
      value = value.slice(1);
    }
    switch (field) {
      case 'event':
        this._event = value;
        break;
      case 'data':
        this._data.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) {
          this._id = value;
        }
        break;
      case 'retry':
        if (/^\d+$/.test(value)) {
          this._retry = parseInt(value, 10);
        }
        break;
    }
  }

  private _partial: string[] = [];
  private _afterCR = false;
  private _data: string[] = [];
  private _event = '';
  private _id = '';
  private _retry: number | null = null;
  private _decoder = new TextDecoder();
}
