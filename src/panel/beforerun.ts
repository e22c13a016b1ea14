/**
 * "If you run this cell": the output the server predicted for the active
 * cell from its text before it runs (a speculation, `speculated` events),
 * shown in the panel's output section while that cell, with that very
 * text, is the next to run. When it runs, the same prediction becomes its
 * own (the server adopts the speculation) and the section is the usual one.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { h, type VirtualElement } from '@lumino/virtualdom';

import { codeHash } from '../live/cellmatch';
import type { ICombo, IPredictionSlot, ISpeculation } from '../live/types';
import type { INotebookLive } from '../tokens';
import { type IPromptActions, outputCard } from './views';

/**
 * The active code cell: its id and its text now.
 */
export interface IActiveCode {
  cellId: string;
  code: string;
}

/**
 * The speculation to show for the active cell, or `null`: there is one for
 * its text and the next step, that cell has not started (once it does, its
 * output section is the live one), and it has not run with this text in
 * this kernel (the cell just run shows its own result, not a rerun's).
 */
export function shownSpeculation(
  store: INotebookLive,
  active: IActiveCode | null
): ISpeculation | null {
  const found = store.speculation;
  if (
    !found ||
    !active ||
    active.code.trim() === '' ||
    store.latestTarget('output') === found.targetStep
  ) {
    return null;
  }
  const hash = codeHash(active.code);
  const ran = store.cellStep(active.cellId);
  if (
    hash !== found.codeHash ||
    (ran?.current && ran.summary.code_hash === hash)
  ) {
    return null;
  }
  return found;
}

/**
 * The cards of a speculation, one per shown predictor × context (a column
 * whose prediction is not made yet says it is being predicted).
 */
export function beforeRunCards(
  found: ISpeculation,
  combos: readonly ICombo[],
  actions: IPromptActions,
  trans: TranslationBundle
): VirtualElement {
  const cards = combos.map(combo => {
    const p = found.predictions.find(
      q => q.predictor === combo.predictor && q.context === combo.context
    );
    const slot: IPredictionSlot | null = p
      ? {
          ...combo,
          task: 'output',
          targetStep: found.targetStep,
          cellId: found.cellId,
          state: p.error ? 'error' : 'done',
          prediction: p,
          partial: null
        }
      : null;
    return outputCard(
      combo,
      found.targetStep,
      slot,
      null,
      { ...actions, retry: null },
      trans,
      { kind: 'predicting' },
      true
    );
  });
  return h.div(
    { className: 'themisto-BeforeRun' },
    h.p(
      { className: 'themisto-Muted themisto-Note' },
      trans.__(
        'Predicted from the selected cell before it runs. Run it with this text and this becomes its output prediction, scored against what it shows.'
      )
    ),
    h.div({ className: 'themisto-Cards' }, cards)
  );
}
