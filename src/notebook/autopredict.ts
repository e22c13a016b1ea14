import { type INotebookTracker, NotebookActions } from '@jupyterlab/notebook';

import type { IPredictionSettings, IThemistoLive } from '../tokens';
import { isFrontier } from './cells';

/**
 * Predict as cells run when the server does not do it by itself (its
 * predictors report `live: false`) and the user wants auto-predict: the
 * output of each cell as it starts, the next cell after each step.
 */
export function startAutoPredict(
  live: IThemistoLive,
  settings: IPredictionSettings,
  tracker: INotebookTracker
): void {
  const wanted = (): boolean => {
    const info = live.predictors;
    return (
      settings.settings.autoPredict &&
      info !== null &&
      !info.live &&
      info.predictors.length > 0
    );
  };
  const warn = (reason: unknown): void => {
    console.warn('themisto: auto-predict request failed', reason);
  };
  NotebookActions.executionScheduled.connect((_, { notebook, cell }) => {
    const panel = tracker.find(p => p.content === notebook);
    const store = panel ? live.store(panel.context.path) : null;
    if (!wanted() || !store || store.recording === false) {
      return;
    }
    if (cell.model.type === 'code') {
      live
        .requestPrediction('output', {
          code: cell.model.sharedModel.getSource(),
          store
        })
        .catch(warn);
    }
  });
  live.eventReceived.connect((_, { store, event }) => {
    if (event.type !== 'step' || !wanted() || store.recording === false) {
      return;
    }
    // Only at the notebook's frontier: elsewhere the next cell is written.
    // (The step names its cell: the page may not have seen it finish yet.)
    const panel = tracker.find(p => p.context.path === store.path);
    const ran = event.step.cell_id ?? store.lastRunCell;
    if (!panel || isFrontier(panel.content, ran)) {
      live.requestPrediction('next-cell', { store }).catch(warn);
    }
  });
}
