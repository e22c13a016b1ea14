import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Clipboard, ICommandPalette } from '@jupyterlab/apputils';
import { ICompletionProviderManager } from '@jupyterlab/completer';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';

// The panel, markers and ghost text attach at activation, so these small
// modules are needed at once.
/* eslint-disable jupyter/prefer-lazy-imports */
import { cellSource, insertCellBelow, replaceActiveCell } from './cellactions';
import { CommandIDs, NO_ARGS, PALETTE_CATEGORY } from './commands';
import { themistoIcon } from './icon';
import { latestNextCell, NextCellInlineProvider } from './inline';
import { CellMarkers } from './markers';
import { toggleNotebookRecording } from './notebookswitch';
import { PredictionPanel } from './panel';
import { PredictionSettings } from './settings';
/* eslint-enable jupyter/prefer-lazy-imports */
import { IPredictionSettings, IThemistoClient, IThemistoLive } from './tokens';

export const PANEL_ID = 'themisto-prediction-panel';

/**
 * Delay (ms) before offering ghost text in a newly selected empty cell.
 */
const GHOST_DELAY = 200;

/**
 * The prediction panel in the right side bar, following the active notebook.
 */
export const panelPlugin: JupyterFrontEndPlugin<void> = {
  id: 'themisto-ext:panel',
  description:
    'A side panel with the predicted output and next cell, scores and runtime state.',
  autoStart: true,
  requires: [
    IThemistoLive,
    IPredictionSettings,
    INotebookTracker,
    IThemistoClient
  ],
  optional: [ILayoutRestorer, ICommandPalette, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    live: IThemistoLive,
    settings: PredictionSettings,
    tracker: INotebookTracker,
    client: IThemistoClient,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    translator: ITranslator | null
  ): void => {
    const trans = (translator ?? nullTranslator).load('themisto_ext');
    const withNotebook = (act: (panel: NotebookPanel) => void): void => {
      const notebook = tracker.currentWidget;
      if (notebook) {
        act(notebook);
      }
    };
    const panel = new PredictionPanel({
      live,
      settings,
      actions: {
        insertBelow: text => withNotebook(nb => insertCellBelow(nb, text)),
        replaceActive: text => withNotebook(nb => replaceActiveCell(nb, text)),
        copy: text => Clipboard.copyToSystem(text),
        cellCode: cellId => {
          const notebook = tracker.currentWidget;
          return notebook ? cellSource(notebook, cellId) : null;
        },
        toggleRecording: async () => {
          const notebook = tracker.currentWidget;
          if (notebook) {
            await toggleNotebookRecording(notebook, client);
          }
        }
      }
    });
    panel.id = PANEL_ID;
    panel.title.icon = themistoIcon;
    panel.title.caption = trans.__('Themisto predictions');
    app.shell.add(panel, 'right', { rank: 650 });
    restorer?.add(panel, PANEL_ID);

    app.commands.addCommand(CommandIDs.openPanel, {
      label: trans.__('Open Prediction Panel'),
      caption: trans.__("Show Themisto's prediction panel"),
      describedBy: NO_ARGS,
      execute: () => app.shell.activateById(PANEL_ID)
    });
    palette?.addItem({
      command: CommandIDs.openPanel,
      category: PALETTE_CATEGORY
    });
  }
};

/**
 * Score badges on executed cells.
 */
export const markersPlugin: JupyterFrontEndPlugin<void> = {
  id: 'themisto-ext:markers',
  description: "Shows each executed cell's output-prediction score on it.",
  autoStart: true,
  requires: [INotebookTracker, IThemistoLive, IPredictionSettings],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    live: IThemistoLive,
    settings: PredictionSettings
  ): void => {
    const attach = (notebook: NotebookPanel): void => {
      const markers = new CellMarkers(notebook, live, settings);
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
    'Offers the predicted next cell as inline (ghost text) completion in an empty cell.',
  autoStart: true,
  requires: [
    ICompletionProviderManager,
    IThemistoLive,
    IPredictionSettings,
    INotebookTracker
  ],
  activate: (
    app: JupyterFrontEnd,
    manager: ICompletionProviderManager,
    live: IThemistoLive,
    settings: PredictionSettings,
    tracker: INotebookTracker
  ): void => {
    manager.registerInlineProvider(new NextCellInlineProvider(live, settings));
    // Typing triggers inline completion, but an empty cell has nothing
    // typed: ask for it when such a cell is being edited and a prediction
    // exists (it needs the editor's focus, hence edit mode).
    const offer = (): void => {
      const notebook = tracker.currentWidget;
      const cell = notebook?.content.activeCell;
      if (
        !settings.settings.ghostText ||
        !notebook ||
        notebook.content.mode !== 'edit' ||
        !cell ||
        cell.model.type !== 'code' ||
        cell.model.sharedModel.getSource().trim() !== '' ||
        !latestNextCell(live.store(notebook.context.path), live, settings)
      ) {
        return;
      }
      manager.inline?.invoke(notebook.id);
    };
    // The completer moves to a new active cell's editor asynchronously and
    // announces nothing when done: wait a moment, once per burst of changes.
    let timer: ReturnType<typeof setTimeout> | null = null;
    const offerSoon = (): void => {
      if (timer !== null) {
        clearTimeout(timer);
      }
      timer = setTimeout(() => {
        timer = null;
        offer();
      }, GHOST_DELAY);
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
        (event.type === 'prediction' || event.type === 'scored') &&
        event.prediction.task === 'next-cell'
      ) {
        offerSoon();
      }
    });
  }
};
