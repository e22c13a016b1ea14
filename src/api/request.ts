import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { apiErrorFromResponse, ThemistoApiError } from './errors';

/**
 * The URL namespace of the Themisto server extension.
 */
export const API_NAMESPACE = 'themisto/api';

/**
 * Query parameters; `undefined` values are left out.
 */
export type Query = Record<string, string | number | string[] | undefined>;

/**
 * The URL of `themisto/api/<path...>?<query>`; path parts are encoded.
 */
export function apiUrl(
  settings: ServerConnection.ISettings,
  path: string[],
  query: Query = {}
): string {
  const url = URLExt.join(
    settings.baseUrl,
    API_NAMESPACE,
    ...path.map(encodeURIComponent)
  );
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (Array.isArray(value)) {
      // Repeated parameters (`?trajectory=a&trajectory=b`).
      value.forEach(item => params.append(key, item));
    } else if (value !== undefined) {
      params.set(key, String(value));
    }
  }
  const search = params.toString();
  return search ? `${url}?${search}` : url;
}

/**
 * Send an authenticated request; network failures become status-0 errors
 * and non-2xx replies errors carrying the server's message.
 */
export async function apiRequest(
  settings: ServerConnection.ISettings,
  url: string,
  init: RequestInit
): Promise<Response> {
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    if (error instanceof Error && error.name === 'AbortError') {
      throw error;
    }
    const reason = error instanceof Error ? error.message : String(error);
    throw new ThemistoApiError(0, `Network error: ${reason}`);
  }
  if (!response.ok) {
    const text = await response.text();
    throw apiErrorFromResponse(response.status, response.statusText, text);
  }
  return response;
}

/**
 * Send a request and parse its JSON reply (`null` for an empty body).
 */
export async function apiJson(
  settings: ServerConnection.ISettings,
  url: string,
  init: RequestInit = { method: 'GET' }
): Promise<unknown> {
  const response = await apiRequest(settings, url, init);
  const text = await response.text();
  if (text.trim() === '') {
    return null;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ThemistoApiError(
      response.status,
      'Invalid JSON response from the Themisto server'
    );
  }
}

/**
 * Send a request whose reply is NDJSON and hand each line, parsed, to
 * `onLine` as it arrives (the whole body at once where the response cannot
 * be read as a stream).
 */
export async function apiLines(
  settings: ServerConnection.ISettings,
  url: string,
  init: RequestInit,
  onLine: (line: unknown) => void
): Promise<void> {
  const response = await apiRequest(settings, url, init);
  const parse = (line: string): void => {
    if (line.trim() === '') {
      return;
    }
    try {
      onLine(JSON.parse(line) as unknown);
    } catch (error) {
      if (error instanceof SyntaxError) {
        throw new ThemistoApiError(
          response.status,
          'Invalid JSON line from the Themisto server'
        );
      }
      throw error;
    }
  };
  const reader = response.body?.getReader?.();
  if (!reader) {
    (await response.text()).split('\n').forEach(parse);
    return;
  }
  const decoder = new TextDecoder();
  let pending = '';
  for (;;) {
    const { done, value } = await reader.read();
    pending += decoder.decode(value, { stream: !done });
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    lines.forEach(parse);
    if (done) {
      parse(pending);
      return;
    }
  }
}
