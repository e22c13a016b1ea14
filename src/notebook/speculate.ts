/**
 * Announce a code cell's text before it runs, so that the server predicts
 * its output while the person reads it (POST speculations): when the cell
 * is selected, when its text has not changed for the `speculationPause`
 * setting, and when a step lands (the trajectory the prediction is made
 * from has grown). If the cell then runs with this text, its prediction is
 * there at Shift+Enter.
 *
 * This module has no JupyterLab dependency so it can be unit tested; the
 * notebook plugin feeds it the active cell.
 */
import { Debouncer } from '@lumino/polling';

import type { SpeculationReply } from '../api/records';
import type { ISpeculationRequest } from '../api/model';
import type { IPredictionSettings } from '../tokens';

/**
 * What an announcement needs to know about the active cell and its
 * notebook, read at the moment it is made.
 */
export interface ISpeculationTarget {
  kernelId: string | null;
  /**
   * The trajectory followed: a kernel that has recorded nothing has no
   * history to predict from.
   */
  trajectoryId: string | null;
  recording: boolean | null;
  lastStep: number;
  /**
   * The active cell's text, or `null` when it is not a code cell.
   */
  code: string | null;
  cellId: string | null;
}

export interface ISpeculatorOptions {
  speculate(body: ISpeculationRequest): Promise<SpeculationReply>;
  settings: IPredictionSettings;
  /**
   * The active cell of the notebook, or `null` without one.
   */
  target(): ISpeculationTarget | null;
}

/**
 * Announces one notebook's active cell; see the module comment.
 */
export class Speculator {
  constructor(private readonly _options: ISpeculatorOptions) {}

  /**
   * The active cell's text changed: announce it after the pause.
   */
  edited(): void {
    const { speculate, speculationPause } = this._options.settings.settings;
    if (!speculate) {
      this._cancel();
      return;
    }
    // A debouncer waits a fixed time: a changed pause setting needs another.
    if (this._pause?.limit !== speculationPause) {
      this._pause?.dispose();
      this._pause = new Debouncer(() => this.announce(), speculationPause);
    }
    this._pause.invoke().catch(() => undefined); // stopped: another edit or a selection
  }

  /**
   * Another cell was selected, or a step landed: announce now.
   */
  selected(): void {
    this._cancel();
    void this.announce();
  }

  /**
   * Announce the active cell unless it was already, with this text after
   * this step (a rejection, e.g. while the kernel ran a cell, is retried).
   * Resolves to whether a request was sent.
   */
  async announce(): Promise<boolean> {
    const target = this._options.target();
    if (
      !this._options.settings.settings.speculate ||
      !target ||
      !target.kernelId ||
      !target.trajectoryId ||
      target.recording === false ||
      target.code === null ||
      target.code.trim() === ''
    ) {
      return false;
    }
    const key = [target.kernelId, target.lastStep, target.code].join('\u0000');
    if (key === this._sent) {
      return false;
    }
    this._sent = key;
    try {
      const reply = await this._options.speculate({
        kernel_id: target.kernelId,
        code: target.code,
        cell_id: target.cellId
      });
      if (!reply.accepted && this._sent === key) {
        this._sent = null;
      }
    } catch (reason) {
      if (this._sent === key) {
        this._sent = null;
      }
      console.warn('themisto: speculation request failed', reason);
    }
    return true;
  }

  dispose(): void {
    this._pause?.dispose();
    this._pause = null;
  }

  /**
   * Forget an announcement waiting for the pause.
   */
  private _cancel(): void {
    void this._pause?.stop();
  }

  /**
   * Announces the active cell once its text has not changed for the pause.
   */
  private _pause: Debouncer<boolean> | null = null;
  private _sent: string | null = null;
}
