/**
 * A notebook's earlier trajectories in brief (before its kernel restarted,
 * or of other kernels it had), newest first: cells not run since keep the
 * badges of their steps there.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */
import type { StepSummary } from '../api/records';
import { StepIndex } from './history';
import type { ICellStep } from './types';

/**
 * Earlier trajectories kept.
 */
export const PAST_KEPT = 8;

export class EarlierTrajectories {
  find(trajectoryId: string): StepIndex | null {
    return this._list.find(i => i.trajectoryId === trajectoryId) ?? null;
  }

  /**
   * The latest step of a cell in the latest trajectory that ran it.
   */
  cellStep(cellId: string): ICellStep | null {
    for (const index of this._list) {
      const summary = index.latestOfCell(cellId);
      if (summary) {
        return { trajectoryId: index.trajectoryId, summary, current: false };
      }
    }
    return null;
  }

  /**
   * The earlier trajectories held, newest first.
   */
  get indexes(): readonly StepIndex[] {
    return this._list;
  }

  /**
   * The cell of the latest step of the newest trajectory with steps.
   */
  get lastCell(): string | null {
    const index = this._list.find(i => i.size > 0);
    return index?.get(index.last)?.cell_id ?? null;
  }

  /**
   * Add steps in brief of one; whether anything changed.
   */
  add(trajectoryId: string, summaries: readonly StepSummary[]): boolean {
    let index = this.find(trajectoryId);
    if (!index) {
      index = new StepIndex(trajectoryId);
      this._list.push(index);
      this._list.splice(PAST_KEPT);
    }
    return index.addSummaries(summaries);
  }

  /**
   * A trajectory left (a kernel restart): newest of the earlier ones.
   */
  keep(index: StepIndex): void {
    if (index.size > 0) {
      this._list = [index, ...this._list.filter(i => i !== index)];
      this._list.splice(PAST_KEPT);
    }
  }

  /**
   * Take one out, to follow it live (it was read before its kernel
   * answered).
   */
  take(trajectoryId: string): StepIndex | null {
    const index = this.find(trajectoryId);
    this._list = this._list.filter(i => i !== index);
    return index;
  }

  private _list: StepIndex[] = [];
}
