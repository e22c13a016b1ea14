/**
 * The prediction panel's header: the notebook, its step count and stream
 * state, "Predict next cell", and banners for every state that explains an
 * empty panel (no notebook, recording off, no predictor, server errors).
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { h, type VirtualElement } from '@lumino/virtualdom';

import type { PredictorsInfo } from '../api/records';
import { localModelDown } from '../live/reasons';
import type { INotebookLive } from '../tokens';
import { button } from '../dom';

/**
 * What the header shows besides the store.
 */
export interface IHeaderState {
  predictors: PredictorsInfo | null;
  predictorsError: string | null;
  autoPredict: boolean;
}

/**
 * What the header's buttons do.
 */
export interface IHeaderActions {
  predictNow(): void;
  toggleRecording(): void;
  refreshPredictors(): void;
}

/**
 * The header's content.
 */
export function headerView(
  store: INotebookLive | null,
  state: IHeaderState,
  actions: IHeaderActions,
  trans: TranslationBundle
): VirtualElement[] {
  if (!store) {
    return [
      h(
        'p',
        { className: 'themisto-Empty' },
        trans.__("Open a notebook to see Themisto's predictions.")
      )
    ];
  }
  return [
    headerLine(store, state, actions, trans),
    ...banners(store, state, actions, trans)
  ];
}

/**
 * A banner for every state that explains an empty or read-only panel.
 */
function banners(
  store: INotebookLive,
  state: IHeaderState,
  actions: IHeaderActions,
  trans: TranslationBundle
): VirtualElement[] {
  const shown: VirtualElement[] = [];
  const banner = (kind: string, ...content: h.Child[]): void => {
    shown.push(
      h('div', { className: 'themisto-Banner', dataset: { kind } }, ...content)
    );
  };
  const replay = store.replayOf;
  if (replay) {
    banner(
      'replay',
      trans.__(
        'Replay of %1’s %2, read-only: its steps, outputs, predictions and runtime as recorded.',
        replay.user,
        replay.notebookPath ?? trans.__('kernel without a notebook')
      )
    );
  }
  if (store.recording === false && !replay) {
    banner(
      'recording-off',
      trans.__(
        "Recording is off for this notebook's kernel: nothing is recorded or predicted."
      ) + ' ',
      button(trans.__('Start recording'), () => actions.toggleRecording())
    );
  }
  const modelDown = localModelDown(state.predictors);
  if (state.predictorsError) {
    banner(
      'unavailable',
      trans.__('Predictions are unavailable: %1', state.predictorsError) + ' ',
      button(trans.__('Retry'), () => actions.refreshPredictors())
    );
  } else if (modelDown) {
    banner(
      'model-off',
      trans.__('The embedded model gives no predictions: %1', modelDown) + ' ',
      button(trans.__('Check again'), () => actions.refreshPredictors())
    );
  } else if (state.predictors && state.predictors.predictors.length === 0) {
    banner(
      'no-predictor',
      trans.__(
        'No predictor is configured on the server (ThemistoExtension.predictors), so nothing is predicted.'
      )
    );
  }
  if (!state.autoPredict) {
    banner(
      'manual',
      trans.__('Auto-predict is off: predictions appear when you ask for them.')
    );
  }
  if (store.connection === 'retrying') {
    banner('reconnecting', trans.__('Reconnecting to the live stream…'));
  }
  return shown;
}

/**
 * The notebook's name, its step count, the stream's state and "Predict next
 * cell".
 */
function headerLine(
  store: INotebookLive,
  state: IHeaderState,
  actions: IHeaderActions,
  trans: TranslationBundle
): VirtualElement {
  const replay = store.replayOf;
  const shown = replay ? (replay.notebookPath ?? store.path) : store.path;
  const name = shown.split('/').pop() ?? shown;
  const connection = replay
    ? trans.__('recorded')
    : !store.kernelId
      ? trans.__('no kernel')
      : store.connection === 'open'
        ? trans.__('live')
        : store.connection === 'closed'
          ? trans.__('paused')
          : trans.__('connecting…');
  const steps = store.stepCount;
  return h(
    'div',
    { className: 'themisto-Header-line' },
    h(
      'span',
      {
        className: 'themisto-Header-name',
        title: shown,
        dataset: replay ? { 'replay-of': replay.user } : {}
      },
      name
    ),
    h(
      'span',
      { className: 'themisto-Header-steps', dataset: { steps: `${steps}` } },
      trans._n('%1 step', '%1 steps', steps)
    ),
    h(
      'span',
      {
        className: 'themisto-Header-connection',
        dataset: { connection: store.connection }
      },
      connection
    ),
    button(trans.__('Predict next cell'), () => actions.predictNow(), {
      className: 'themisto-PredictNow',
      title: trans.__('Predict the next cell now'),
      disabled:
        !!replay || !store.kernelId || state.predictors?.predictors.length === 0
    })
  );
}
