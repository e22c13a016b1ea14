/**
 * The prediction slots of a notebook's latest targets: one per task ×
 * target step × predictor × context, from `predicting` to its answer (or
 * error), bounded to the latest targets; and which targets the user asked
 * for.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */
import type {
  LivePrediction,
  PredictorEvent,
  PredictionTask
} from '../api/records';
import { insertSorted, trimFront } from './order';
import type { ICombo, IPredictionSlot } from './types';

export class PredictionSlots {
  /**
   * @param _limit Target steps kept per task (the latest ones).
   */
  constructor(private readonly _limit: number) {}

  /**
   * The highest target step with a prediction of this task, or `null`.
   */
  latestTarget(task: PredictionTask): number | null {
    const order = this._order[task];
    return order.length ? order[order.length - 1] : null;
  }

  /**
   * The kept target steps of a task, ascending.
   */
  targets(task: PredictionTask): readonly number[] {
    return this._order[task];
  }

  /**
   * The predictions of one target step, in arrival order.
   */
  slots(task: PredictionTask, targetStep: number): IPredictionSlot[] {
    const slots = this._slots[task].get(targetStep);
    return slots ? [...slots.values()] : [];
  }

  /**
   * Predictor × context pairs seen in predictions, in arrival order.
   */
  get combos(): Iterable<ICombo> {
    return this._combos.values();
  }

  isRequested(task: PredictionTask, targetStep: number): boolean {
    return this._requested.has(`${task}:${targetStep}`);
  }

  /**
   * Remember a user request; whether it is new.
   */
  markRequested(task: PredictionTask, target: number): boolean {
    const key = `${task}:${target}`;
    if (this._requested.has(key)) {
      return false;
    }
    this._requested.add(key);
    return true;
  }

  /**
   * The slot of a prediction, created on first sight; `null` for targets
   * older than those kept.
   */
  slot(
    task: PredictionTask,
    targetStep: number,
    combo: ICombo & { cell_id: string | null }
  ): IPredictionSlot | null {
    const key = `${combo.predictor}\u0000${combo.context}`;
    if (!this._combos.has(key)) {
      this._combos.set(key, {
        predictor: combo.predictor,
        context: combo.context
      });
    }
    let slots = this._slots[task].get(targetStep);
    if (!slots) {
      const order = this._order[task];
      if (order.length >= this._limit && targetStep < order[0]) {
        return null;
      }
      slots = new Map();
      this._slots[task].set(targetStep, slots);
      insertSorted(order, targetStep);
      for (const old of trimFront(order, this._limit)) {
        this._slots[task].delete(old);
      }
    }
    let slot = slots.get(key);
    if (!slot) {
      slot = {
        task,
        targetStep,
        predictor: combo.predictor,
        context: combo.context,
        cellId: combo.cell_id,
        state: 'predicting',
        prediction: null
      };
      slots.set(key, slot);
    }
    return slot;
  }

  /**
   * A predictor started on a target: a new attempt (a retry) replaces the
   * previous answer.
   */
  started(event: PredictorEvent): void {
    const slot = this.slot(event.task, event.target_step, event);
    if (slot) {
      slot.state = 'predicting';
      slot.prediction = null;
      slot.partial = null;
      slot.cellId = event.cell_id ?? slot.cellId;
    }
  }

  /**
   * The answer so far of a prediction being written; ignored once it is
   * done (a late piece). Whether it changed what is shown.
   */
  writing(event: PredictorEvent & { text: string }): boolean {
    const slot = this.slot(event.task, event.target_step, event);
    if (!slot || slot.state !== 'predicting') {
      return false;
    }
    slot.partial = event.text;
    slot.cellId = event.cell_id ?? slot.cellId;
    return true;
  }

  /**
   * A prediction's answer (or error) arrived.
   */
  answered(prediction: LivePrediction): void {
    const slot = this.slot(prediction.task, prediction.target_step, prediction);
    if (slot) {
      slot.prediction = prediction;
      slot.partial = null;
      slot.cellId = prediction.cell_id ?? slot.cellId;
      slot.state = prediction.error ? 'error' : 'done';
    }
  }

  /**
   * Forget every target (another trajectory); the combos seen stay.
   */
  clear(): void {
    this._slots = { output: new Map(), 'next-cell': new Map() };
    this._order = { output: [], 'next-cell': [] };
    this._requested.clear();
  }

  private _slots: Record<
    PredictionTask,
    Map<number, Map<string, IPredictionSlot>>
  > = { output: new Map(), 'next-cell': new Map() };
  private _order: Record<PredictionTask, number[]> = {
    output: [],
    'next-cell': []
  };
  private _combos = new Map<string, ICombo>();
  private _requested = new Set<string>();
}
