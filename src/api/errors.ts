/**
 * Errors raised by the Themisto REST client.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */

/**
 * An error returned by (or while talking to) the Themisto server API.
 */
export class ThemistoApiError extends Error {
  /**
   * @param status HTTP status code; `0` when no response was received.
   * @param message Human readable message, from the server when it gave one.
   */
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message);
    this.name = 'ThemistoApiError';
  }
}

/**
 * Extract the error message from a response body.
 *
 * The server answers errors with a JSON body `{"message": "..."}`; anything
 * else (empty body, HTML page, JSON without a string `message`) falls back to
 * the HTTP status text, or to a generic message.
 */
export function errorMessageFromBody(
  status: number,
  statusText: string,
  body: string
): string {
  const trimmed = body.trim();
  if (trimmed.length > 0) {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (
        typeof parsed === 'object' &&
        parsed !== null &&
        'message' in parsed
      ) {
        const message = (parsed as { message: unknown }).message;
        if (typeof message === 'string' && message.length > 0) {
          return message;
        }
      }
    } catch {
      // Not JSON: fall through to the status text.
    }
  }
  if (statusText.length > 0) {
    return statusText;
  }
  return `Request failed with status ${status}`;
}

/**
 * Build the {@link ThemistoApiError} for a non-2xx response.
 */
export function apiErrorFromResponse(
  status: number,
  statusText: string,
  body: string
): ThemistoApiError {
  return new ThemistoApiError(
    status,
    errorMessageFromBody(status, statusText, body)
  );
}
