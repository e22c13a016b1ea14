/**
 * A notebook's trajectory exported next to it: the JSONL is read from the
 * server with an authenticated request (no token in a URL) and written
 * through the Jupyter contents API, in chunks as it streams, where the file
 * browser shows it.
 */
import { PathExt } from '@jupyterlab/coreutils';
import type { Contents } from '@jupyterlab/services';

/**
 * Characters written per request: the contents API appends chunks, so an
 * export never has to sit whole in the page.
 */
export const CHUNK_CHARS = 4 * 1024 * 1024;

/**
 * A path beside `notebookPath` named `filename` that no file has yet
 * (`name.jsonl`, else `name-1.jsonl`, ...): an export never overwrites.
 */
export async function freePath(
  contents: Pick<Contents.IManager, 'get'>,
  notebookPath: string,
  filename: string
): Promise<string> {
  const dir = PathExt.dirname(notebookPath);
  const ext = PathExt.extname(filename);
  const stem = filename.slice(0, filename.length - ext.length);
  for (let n = 0; n < 1000; n++) {
    const name = n === 0 ? filename : `${stem}-${n}${ext}`;
    const path = dir ? PathExt.join(dir, name) : name;
    try {
      await contents.get(path, { content: false });
    } catch {
      return path;
    }
  }
  throw new Error(`No free file name for ${filename} in ${dir || '/'}`);
}

/**
 * Write a streamed response to `path` through the contents API; returns the
 * number of characters written.
 */
export async function saveStream(
  contents: Pick<Contents.IManager, 'save'>,
  path: string,
  response: Response,
  chunkChars: number = CHUNK_CHARS
): Promise<number> {
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let chunk = 0;
  let written = 0;
  const save = async (content: string, last: boolean): Promise<void> => {
    // One request when it all fits; else numbered chunks, the last one -1.
    const chunked = !last || chunk > 0;
    if (chunked) {
      chunk++;
    }
    await contents.save(path, {
      type: 'file',
      format: 'text',
      content,
      ...(chunked ? { chunk: last ? -1 : chunk } : {})
    });
    written += content.length;
  };
  for (;;) {
    const { done, value } = reader
      ? await reader.read()
      : { done: true, value: undefined };
    buffer += decoder.decode(value, { stream: !done });
    while (buffer.length >= chunkChars) {
      await save(buffer.slice(0, chunkChars), false);
      buffer = buffer.slice(chunkChars);
    }
    if (done) {
      break;
    }
  }
  await save(buffer, true);
  return written;
}
