/**
 * The prediction panel's header: the notebook, its step count and stream
 * state, "Predict next cell", and banners for every state that explains an
 * empty panel (no notebook, recording off, no predictor, server errors).
 */
import { button, h } from './dom';
import { IPredictorsInfo } from './livemodel';
import { NotebookLive } from './livestore';

/**
 * What the header shows besides the store.
 */
export interface IHeaderState {
  predictors: IPredictorsInfo | null;
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
 * A key that changes whenever the header would look different.
 */
export function headerKey(
  store: NotebookLive | null,
  state: IHeaderState
): string {
  return JSON.stringify([
    store?.path,
    store?.lastStep,
    store?.connection,
    store?.recording,
    store?.kernelId,
    state
  ]);
}

/**
 * The header's content.
 */
export function headerView(
  store: NotebookLive | null,
  state: IHeaderState,
  actions: IHeaderActions
): HTMLElement[] {
  if (!store) {
    return [
      h(
        'p',
        { class: 'themisto-Empty' },
        "Open a notebook to see Themisto's predictions."
      )
    ];
  }
  const banners: HTMLElement[] = [];
  const banner = (kind: string, ...content: (Node | string)[]): void => {
    banners.push(
      h('div', { class: 'themisto-Banner', 'data-kind': kind }, ...content)
    );
  };
  if (store.recording === false) {
    banner(
      'recording-off',
      "Recording is off for this notebook's kernel: nothing is recorded or predicted. ",
      button('Start recording', () => actions.toggleRecording())
    );
  }
  if (state.predictorsError) {
    banner(
      'unavailable',
      `Predictions are unavailable: ${state.predictorsError} `,
      button('Retry', () => actions.refreshPredictors())
    );
  } else if (state.predictors && state.predictors.predictors.length === 0) {
    banner(
      'no-predictor',
      'No predictor is configured on the server (ThemistoExtension.predictors), so nothing is predicted.'
    );
  }
  if (!state.autoPredict) {
    banner(
      'manual',
      'Auto-predict is off: predictions appear when you ask for them.'
    );
  }
  if (store.connection === 'retrying') {
    banner('reconnecting', 'Reconnecting to the live stream…');
  }
  const name = store.path.split('/').pop() ?? store.path;
  const connection = !store.kernelId
    ? 'no kernel'
    : store.connection === 'open'
      ? 'live'
      : store.connection === 'closed'
        ? 'paused'
        : 'connecting…';
  return [
    h(
      'div',
      { class: 'themisto-Header-line' },
      h('span', { class: 'themisto-Header-name', title: store.path }, name),
      h(
        'span',
        { class: 'themisto-Header-steps', 'data-steps': store.lastStep },
        `${store.lastStep} ${store.lastStep === 1 ? 'step' : 'steps'}`
      ),
      h(
        'span',
        {
          class: 'themisto-Header-connection',
          'data-connection': store.connection
        },
        connection
      ),
      button('Predict next cell', () => actions.predictNow(), {
        class: 'themisto-PredictNow',
        title: 'Predict the next cell now',
        disabled: !store.kernelId || state.predictors?.predictors.length === 0
      })
    ),
    ...banners
  ];
}
