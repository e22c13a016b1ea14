/**
 * What Themisto adds to notebooks: the notebook's own recording choice,
 * predictions asked for as cells run, score badges on cells, and the
 * next-cell prediction as ghost text.
 */
import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICompletionProviderManager } from '@jupyterlab/completer';
import type { Cell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { Debouncer } from '@lumino/polling';

// These small modules attach to notebooks at activation, so they are
// needed at once.
/* eslint-disable jupyter/prefer-lazy-imports */
import { CommandIDs } from '../commands';
import { startAutoPredict } from '../notebook/autopredict';
import {
  isNextCell,
  latestNextCell,
  NextCellInlineProvider
} from '../notebook/inline';
import { CellMarkers } from '../notebook/markers';
import { applyNotebookRecording } from '../notebook/recording';
import { Speculator } from '../notebook/speculate';
/* eslint-enable jupyter/prefer-lazy-imports */
import {
  type ILiveEventArgs,
  IPredictionSettings,
  IThemistoClient,
  IThemistoLive
} from '../tokens';

/**
 * Delay (ms) before offering ghost text in a newly selected empty cell.
 */
const GHOST_DELAY = 200;

/**
 * Honours a notebook's `themisto.recording` metadata for every kernel it uses.
 */
export const notebookSwitchPlugin: JupyterFrontEndPlugin<void> = {
  id: 'themisto-ext:notebook-switch',
  description: "Applies a notebook's recording choice to its kernels.",
  autoStart: true,
  requires: [INotebookTracker, IThemistoClient],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    client: IThemistoClient
  ): void => {
    tracker.widgetAdded.connect((_, panel) =>
      applyNotebookRecording(panel, client)
    );
  }
};

/**
 * Asks for predictions as cells run when the server does not.
 */
export const autoPredictPlugin: JupyterFrontEndPlugin<void> = {
  id: 'themisto-ext:auto-predict',
  description:
    'Asks for predictions as cells run when the server does not predict by itself.',
  autoStart: true,
  requires: [IThemistoLive, IPredictionSettings, INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    live: IThemistoLive,
    settings: IPredictionSettings,
    tracker: INotebookTracker
  ): void => startAutoPredict(live, settings, tracker)
};

/**
 * Announces the active code cell's text before it runs, so that its output
 * prediction is ready when it does (the `speculate` setting).
 */
export const speculationPlugin: JupyterFrontEndPlugin<void> = {
  id: 'themisto-ext:speculation',
  description:
    "Asks the server to predict a code cell's output before it runs: on selection and after a pause in typing.",
  autoStart: true,
  requires: [
    IThemistoClient,
    IThemistoLive,
    IPredictionSettings,
    INotebookTracker
  ],
  activate: (
    app: JupyterFrontEnd,
    client: IThemistoClient,
    live: IThemistoLive,
    settings: IPredictionSettings,
    tracker: INotebookTracker
  ): void => {
    const attach = (panel: NotebookPanel): void => {
      const speculator = new Speculator({
        speculate: body => client.speculate(body),
        settings,
        target: () => {
          const cell = panel.content.activeCell;
          const store = live.store(panel.context.path);
          if (!cell || !store || live.predictors?.predictors.length === 0) {
            return null;
          }
          return {
            kernelId: store.kernelId,
            trajectoryId: store.trajectoryId,
            recording: store.recording,
            lastStep: store.lastStep,
            code:
              cell.model.type === 'code'
                ? cell.model.sharedModel.getSource()
                : null,
            cellId: cell.model.id
          };
        }
      });
      let watched: Cell | null = null;
      const onSource = (
        _: unknown,
        change: { sourceChange?: unknown }
      ): void => {
        if (change.sourceChange) {
          speculator.edited();
        }
      };
      const follow = (): void => {
        watched?.model.sharedModel.changed.disconnect(onSource);
        watched = panel.content.activeCell;
        watched?.model.sharedModel.changed.connect(onSource);
        speculator.selected();
      };
      panel.content.activeCellChanged.connect(follow);
      const onEvent = (
        _: IThemistoLive,
        { store, event }: ILiveEventArgs
      ): void => {
        if (event.type === 'step' && store.path === panel.context.path) {
          speculator.selected();
        }
      };
      live.eventReceived.connect(onEvent);
      follow();
      panel.disposed.connect(() => {
        watched?.model.sharedModel.changed.disconnect(onSource);
        panel.content.activeCellChanged.disconnect(follow);
        live.eventReceived.disconnect(onEvent);
        speculator.dispose();
      });
    };
    tracker.forEach(attach);
    tracker.widgetAdded.connect((_, panel) => attach(panel));
  }
};

/**
 * Score badges on executed cells.
 */
export const markersPlugin: JupyterFrontEndPlugin<void> = {
  id: 'themisto-ext:markers',
  description:
    "Shows each executed cell's output-prediction score (click: review the step) and a footer with its recorded time and memory.",
  autoStart: true,
  requires: [INotebookTracker, IThemistoLive, IPredictionSettings],
  optional: [ITranslator],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    live: IThemistoLive,
    settings: IPredictionSettings,
    translator: ITranslator | null
  ): void => {
    const trans = (translator ?? nullTranslator).load('themisto_ext');
    const review = (step: number, trajectory: string | null): void =>
      void app.commands.execute(CommandIDs.showStep, {
        step,
        ...(trajectory ? { trajectory } : {})
      });
    const attach = (notebook: NotebookPanel): void => {
      const markers = new CellMarkers(notebook, live, settings, trans, review);
      notebook.disposed.connect(() => markers.dispose());
    };
    tracker.forEach(attach);
    tracker.widgetAdded.connect((_, notebook) => attach(notebook));
  }
};

/**
 * The next-cell prediction as ghost text in an empty cell.
 */
export const inlinePlugin: JupyterFrontEndPlugin<void> = {
  id: 'themisto-ext:inline',
  description:
    "Offers the predicted next cell as inline (ghost text) completion in an empty cell, and the completer's rest of a cell being typed.",
  autoStart: true,
  requires: [
    ICompletionProviderManager,
    IThemistoLive,
    IPredictionSettings,
    INotebookTracker,
    IThemistoClient
  ],
  optional: [ITranslator],
  activate: (
    app: JupyterFrontEnd,
    manager: ICompletionProviderManager,
    live: IThemistoLive,
    settings: IPredictionSettings,
    tracker: INotebookTracker,
    client: IThemistoClient,
    translator: ITranslator | null
  ): void => {
    manager.registerInlineProvider(
      new NextCellInlineProvider(
        live,
        settings,
        (translator ?? nullTranslator).load('themisto_ext'),
        async (kernelId, beginning, after, signal, onText) =>
          (
            await client.completeCell(
              { kernel_id: kernelId, beginning, after },
              signal,
              onText
            )
          ).completion
      )
    );
    // Typing triggers inline completion, but an empty cell has nothing
    // typed: ask for it when such a cell is being edited and a prediction
    // exists (it needs the editor's focus, hence edit mode).
    const offer = (): void => {
      const notebook = tracker.currentWidget;
      const cell = notebook?.content.activeCell;
      const store = notebook ? live.store(notebook.context.path) : null;
      if (
        !settings.settings.ghostText ||
        !notebook ||
        notebook.content.mode !== 'edit' ||
        !cell ||
        !isNextCell(notebook, store) ||
        cell.model.sharedModel.getSource().trim() !== '' ||
        !latestNextCell(store, live, settings)
      ) {
        return;
      }
      manager.inline?.invoke(notebook.id);
    };
    // The completer moves to a new active cell's editor asynchronously and
    // announces nothing when done: wait a moment, once per burst of changes.
    const ghost = new Debouncer(offer, GHOST_DELAY);
    const offerSoon = (): void => {
      ghost.invoke().catch(() => undefined);
    };
    tracker.activeCellChanged.connect(offerSoon);
    const watchMode = (notebook: NotebookPanel): void => {
      notebook.content.stateChanged.connect((_, change) => {
        if (change.name === 'mode' && change.newValue === 'edit') {
          offerSoon();
        }
      });
    };
    tracker.forEach(watchMode);
    tracker.widgetAdded.connect((_, notebook) => watchMode(notebook));
    live.eventReceived.connect((_, { store, event }) => {
      if (
        store === live.current &&
        event.type === 'prediction' &&
        event.prediction.task === 'next-cell'
      ) {
        offerSoon();
      }
    });
  }
};
