/**
 * The part of a traceback a reader looks for first: the error line and the
 * frame it was raised in (IPython prints them last, below every caller).
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */

/**
 * Where a frame of an IPython traceback begins (`Cell In[3], line 2`,
 * `File /path/mod.py:12, in f(x)`, older `Input In [3]` and
 * `<ipython-input-3-…>`).
 */
const FRAME =
  /^(Cell In\[|File [^\n]*, line \d+|File \S|Input In \[|<ipython-input-)/;

export interface ITracebackSummary {
  /**
   * `NameError: name 'x' is not defined`.
   */
  error: string;
  /**
   * The last frame's lines (its header and the code around the failing
   * line), empty when the traceback has none.
   */
  frame: string;
}

/**
 * The error line and last frame of a cell's error output; `null` when the
 * text has no line naming the error.
 */
export function summarizeTraceback(
  text: string,
  ename: string
): ITracebackSummary | null {
  const lines = text.replace(/\s+$/, '').split('\n');
  let errorAt = -1;
  for (let i = lines.length - 1; i >= 0; i--) {
    if (lines[i] === ename || lines[i].startsWith(`${ename}:`)) {
      errorAt = i;
      break;
    }
  }
  if (errorAt < 0) {
    return null;
  }
  let frameAt = -1;
  for (let i = errorAt - 1; i >= 0; i--) {
    if (FRAME.test(lines[i])) {
      frameAt = i;
      break;
    }
  }
  const frame =
    frameAt < 0
      ? ''
      : lines.slice(frameAt, errorAt).join('\n').replace(/\s+$/, '');
  return { error: lines.slice(errorAt).join('\n'), frame };
}
