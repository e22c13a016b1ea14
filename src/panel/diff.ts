/**
 * A text diff for "predicted vs real output": jsdiff's Myers diff on
 * characters, falling back to lines, then to one changed block, each bounded
 * so that a 200,000-character output never freezes the page.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */

import { diffArrays, diffChars } from 'diff';

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
 * Default bound on a diff's work, in compared tokens: Myers' diff costs about
 * (length of both sides) × (edits), so a side pair may take at most
 * `maxCells / (n + m)` edits at a level before the next coarser one is tried.
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
  if (!charDiff(midA, midB, maxCells, out)) {
    granularity = 'line';
    if (!lineDiff(splitLines(midA), splitLines(midB), maxCells, out)) {
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

/**
 * The edits a diff of sides `n` and `m` tokens long may take within
 * `maxCells`.
 */
function editBound(n: number, m: number, maxCells: number): number {
  return Math.floor(maxCells / Math.max(1, n + m));
}

/**
 * `a` against `b` by character (code points: jsdiff never splits an emoji)
 * into `out`; false, writing nothing, when it would take more edits than
 * `maxCells` allows.
 */
function charDiff(
  a: string,
  b: string,
  maxCells: number,
  out: SegmentBuilder
): boolean {
  if (!a || !b) {
    out.push('delete', a);
    out.push('insert', b);
    return true;
  }
  const changes = diffChars(a, b, {
    maxEditLength: editBound(a.length, b.length, maxCells)
  });
  if (!changes) {
    return false;
  }
  for (const change of changes) {
    out.push(
      change.added ? 'insert' : change.removed ? 'delete' : 'equal',
      change.value
    );
  }
  return true;
}

/**
 * `a` against `b` by line into `out`, a run of deleted lines followed by
 * inserted ones refined by character when small enough (a changed number in
 * a table shows as that number); false, writing nothing, when it would take
 * more edits than `maxCells` allows.
 */
function lineDiff(
  a: string[],
  b: string[],
  maxCells: number,
  out: SegmentBuilder
): boolean {
  const changes = diffArrays(a, b, {
    maxEditLength: editBound(a.length, b.length, maxCells)
  });
  if (!changes) {
    return false;
  }
  let deleted = '';
  let inserted = '';
  const flush = (): void => {
    if (!charDiff(deleted, inserted, maxCells, out)) {
      out.push('delete', deleted);
      out.push('insert', inserted);
    }
    deleted = '';
    inserted = '';
  };
  for (const change of changes) {
    const text = change.value.join('');
    if (change.removed) {
      deleted += text;
    } else if (change.added) {
      inserted += text;
    } else {
      flush();
      out.push('equal', text);
    }
  }
  flush();
  return true;
}
