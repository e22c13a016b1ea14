/**
 * Which recorded steps belong to a notebook's cells when the ids they were
 * recorded under are gone. A notebook of nbformat < 4.5 (most notebooks in
 * the wild) keeps no cell ids on disk: JupyterLab gives its cells new ones at
 * every load, so after a reload no step names a cell. Such a cell is matched
 * by its code (the hash of its source equals that of the recorded cell's
 * latest step) and, among cells of equal code, by position: the n-th such
 * cell in the notebook takes the n-th recorded cell in the order they first
 * ran.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */
import type { StepSummary } from '../api/records';

/**
 * A step summary's `code_hash` of `code`: 32-bit FNV-1a of its UTF-8 bytes,
 * 8 hex digits (as `records.code_hash` on the server).
 */
export function codeHash(code: string): string {
  let hash = 0x811c9dc5;
  for (const byte of ENCODER.encode(code)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

const ENCODER = new TextEncoder();

/**
 * A notebook's code cell: its id now and its source.
 */
export interface ICellSource {
  id: string;
  source: string;
}

/**
 * A recorded cell: the id it ran under, the first and the latest of its steps.
 */
export interface IRecordedCell {
  cellId: string;
  first: number;
  latest: StepSummary;
}

/**
 * The recorded cells of steps in order (one trajectory), by the id they ran
 * under.
 */
export function recordedCells(
  summaries: Iterable<StepSummary>
): Map<string, IRecordedCell> {
  const cells = new Map<string, IRecordedCell>();
  for (const summary of summaries) {
    if (summary.cell_id === null) {
      continue;
    }
    const held = cells.get(summary.cell_id);
    if (held) {
      held.latest = summary;
    } else {
      cells.set(summary.cell_id, {
        cellId: summary.cell_id,
        first: summary.step,
        latest: summary
      });
    }
  }
  return cells;
}

/**
 * For each cell no step names, the recorded cell (of those no cell names)
 * whose latest step ran the cell's code: live id → recorded id.
 */
export function matchCells(
  cells: readonly ICellSource[],
  recorded: Iterable<IRecordedCell>
): Map<string, string> {
  const all = [...recorded];
  const live = new Set(cells.map(c => c.id));
  const orphans = all.filter(r => !live.has(r.cellId));
  const byHash = new Map<string, IRecordedCell[]>();
  for (const orphan of orphans.sort((a, b) => a.first - b.first)) {
    const hash = orphan.latest.code_hash;
    const queue = byHash.get(hash);
    if (queue) {
      queue.push(orphan);
    } else {
      byHash.set(hash, [orphan]);
    }
  }
  const aliases = new Map<string, string>();
  if (byHash.size === 0) {
    return aliases;
  }
  const named = new Set(all.map(r => r.cellId));
  for (const cell of cells) {
    if (named.has(cell.id) || cell.source.trim() === '') {
      continue;
    }
    const found = byHash.get(codeHash(cell.source))?.shift();
    if (found) {
      aliases.set(cell.id, found.cellId);
    }
  }
  return aliases;
}

/**
 * What `CellAliases` reads of a trajectory's steps in brief (a StepIndex).
 */
export interface IRecordedIndex {
  readonly trajectoryId: string | null;
  readonly size: number;
  readonly last: number;
  summaries(): Iterable<StepSummary>;
}

/**
 * The notebook's code cells matched to the ids their steps ran under, for a
 * notebook whose cells have new ids (nbformat < 4.5, reloaded): learnt by
 * `recognize`, asked both ways.
 */
export class CellAliases {
  /**
   * Match `cells` against the cells the trajectories recorded (the current
   * one first).
   */
  recognize(
    cells: readonly ICellSource[],
    indexes: readonly IRecordedIndex[]
  ): void {
    const recorded = this._recordedCells(indexes);
    if (recorded.size === 0) {
      this._aliases.clear();
      this._unaliased.clear();
      return;
    }
    this._aliases = matchCells(cells, recorded.values());
    this._unaliased = new Map(
      [...this._aliases].map(([live, ran]) => [ran, live])
    );
  }

  /**
   * The id a cell of the notebook ran under, when it is another.
   */
  ranAs(cellId: string): string | null {
    return this._aliases.get(cellId) ?? null;
  }

  /**
   * The notebook's cell that ran under `recorded`.
   */
  cellOf(recorded: string): string {
    return this._unaliased.get(recorded) || recorded;
  }

  /**
   * Cells as recorded, current trajectory first; kept until steps land.
   */
  private _recordedCells(
    indexes: readonly IRecordedIndex[]
  ): Map<string, IRecordedCell> {
    const key = indexes
      .map(i => `${i.trajectoryId}:${i.size}:${i.last}`)
      .join('|');
    if (key !== this._recordedKey) {
      this._recordedKey = key;
      this._recorded = new Map();
      for (const index of indexes) {
        for (const [id, cell] of recordedCells(index.summaries())) {
          if (!this._recorded.has(id)) {
            this._recorded.set(id, cell);
          }
        }
      }
    }
    return this._recorded;
  }

  private _aliases = new Map<string, string>();
  private _unaliased = new Map<string, string>();
  private _recorded = new Map<string, IRecordedCell>();
  private _recordedKey = '';
}
