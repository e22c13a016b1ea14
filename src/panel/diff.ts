/**
 * A small text diff for "predicted vs real output": longest common
 * subsequence on characters, falling back to lines, then to one changed
 * block, so that a 200,000-character output never freezes the page.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */

/**
 * `delete`: only in the first text (the prediction); `insert`: only in the
 * second (the real output).
 */
export type DiffOp = 'equal' | 'delete' | 'insert';

/**
 * A run of text with one operation.
 */
export interface IDiffSegment {
  op: DiffOp;
  text: string;
}

/**
 * A diff and how fine it is.
 */
export interface IDiffResult {
  segments: IDiffSegment[];
  /**
   * `char` when the changed middle was diffed by character, `line` when by
   * line (changed lines refined by character where small), `block` when it
   * was too large for either and is shown as one replaced block.
   */
  granularity: 'char' | 'line' | 'block';
}

/**
 * Default cap on the LCS table (n × m cells): 1e6 cells is 2 MB and a few
 * milliseconds; the table is quadratic, so larger inputs fall back.
 */
export const DEFAULT_MAX_CELLS = 1_000_000;

/**
 * Diff `a` (predicted) against `b` (actual).
 */
export function diffText(
  a: string,
  b: string,
  maxCells: number = DEFAULT_MAX_CELLS
): IDiffResult {
  // A common prefix and suffix cost nothing to find and usually cover most
  // of an output that is nearly right.
  let prefix = 0;
  const limit = Math.min(a.length, b.length);
  while (prefix < limit && a.charCodeAt(prefix) === b.charCodeAt(prefix)) {
    prefix++;
  }
  let suffix = 0;
  while (
    suffix < limit - prefix &&
    a.charCodeAt(a.length - 1 - suffix) === b.charCodeAt(b.length - 1 - suffix)
  ) {
    suffix++;
  }
  // Never cut a surrogate pair in two.
  if (prefix > 0 && isHighSurrogate(a.charCodeAt(prefix - 1))) {
    prefix--;
  }
  if (suffix > 0 && isLowSurrogate(a.charCodeAt(a.length - suffix))) {
    suffix--;
  }
  const midA = a.slice(prefix, a.length - suffix);
  const midB = b.slice(prefix, b.length - suffix);
  const out = new SegmentBuilder();
  out.push('equal', a.slice(0, prefix));
  let granularity: IDiffResult['granularity'] = 'char';
  if (midA.length * midB.length <= maxCells) {
    diffChars(midA, midB, out);
  } else {
    const linesA = splitLines(midA);
    const linesB = splitLines(midB);
    if (linesA.length * linesB.length <= maxCells) {
      granularity = 'line';
      diffLines(linesA, linesB, maxCells, out);
    } else {
      granularity = 'block';
      out.push('delete', midA);
      out.push('insert', midB);
    }
  }
  out.push('equal', a.slice(a.length - suffix));
  return { segments: out.segments, granularity };
}

/**
 * The text of one side of a diff: `a` is equal + delete, `b` equal + insert.
 */
export function sideText(segments: IDiffSegment[], side: 'a' | 'b'): string {
  const skip: DiffOp = side === 'a' ? 'insert' : 'delete';
  return segments
    .filter(s => s.op !== skip)
    .map(s => s.text)
    .join('');
}

/**
 * Split text into lines that keep their line break, so that joining them
 * gives the text back.
 */
export function splitLines(text: string): string[] {
  const lines = text.match(/[^\n]*\n|[^\n]+$/g);
  return lines ?? [];
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/**
 * Collects segments, merging neighbours with the same operation.
 */
class SegmentBuilder {
  readonly segments: IDiffSegment[] = [];

  push(op: DiffOp, text: string): void {
    if (text.length === 0) {
      return;
    }
    const last = this.segments[this.segments.length - 1];
    if (last && last.op === op) {
      last.text += text;
    } else {
      this.segments.push({ op, text });
    }
  }
}

function diffChars(a: string, b: string, out: SegmentBuilder): void {
  // Code points, not UTF-16 units, when there are surrogates: a highlight
  // must not split an emoji.
  const surrogates = /[\ud800-\udfff]/;
  const ta = surrogates.test(a) ? Array.from(a) : a;
  const tb = surrogates.test(b) ? Array.from(b) : b;
  lcsWalk(
    ta.length,
    tb.length,
    (i, j) => ta[i] === tb[j],
    (op, i, j) => out.push(op, op === 'insert' ? tb[j] : ta[i])
  );
}

function diffLines(
  a: string[],
  b: string[],
  maxCells: number,
  out: SegmentBuilder
): void {
  // A run of deleted lines followed by inserted ones is refined by character
  // when small enough: a changed number in a table shows as that number.
  let deleted = '';
  let inserted = '';
  const flush = (): void => {
    if (deleted && inserted && deleted.length * inserted.length <= maxCells) {
      diffChars(deleted, inserted, out);
    } else {
      out.push('delete', deleted);
      out.push('insert', inserted);
    }
    deleted = '';
    inserted = '';
  };
  lcsWalk(
    a.length,
    b.length,
    (i, j) => a[i] === b[j],
    (op, i, j) => {
      if (op === 'delete') {
        deleted += a[i];
      } else if (op === 'insert') {
        inserted += b[j];
      } else {
        flush();
        out.push('equal', a[i]);
      }
    }
  );
  flush();
}

/**
 * Walk an LCS alignment of two sequences of lengths `n` and `m`, calling
 * `emit` for each token in order (`i` indexes the first, `j` the second).
 */
function lcsWalk(
  n: number,
  m: number,
  eq: (i: number, j: number) => boolean,
  emit: (op: DiffOp, i: number, j: number) => void
): void {
  const width = m + 1;
  // lengths[i * width + j]: LCS length of the suffixes from i and j. Values
  // never exceed min(n, m), hence the narrow array when possible.
  const size = (n + 1) * width;
  const lengths =
    Math.min(n, m) < 0xffff ? new Uint16Array(size) : new Uint32Array(size);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      const at = i * width + j;
      lengths[at] = eq(i, j)
        ? lengths[at + width + 1] + 1
        : Math.max(lengths[at + width], lengths[at + 1]);
    }
  }
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (eq(i, j)) {
      emit('equal', i++, j++);
    } else if (lengths[(i + 1) * width + j] >= lengths[i * width + j + 1]) {
      emit('delete', i++, j);
    } else {
      emit('insert', i, j++);
    }
  }
  while (i < n) {
    emit('delete', i++, j);
  }
  while (j < m) {
    emit('insert', i, j++);
  }
}
