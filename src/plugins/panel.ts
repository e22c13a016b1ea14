/**
 * The prediction panel in the right side bar, and the commands that review
 * one step in it (with keyboard shortcuts, schema/panel.json).
 */
import {
  ILayoutRestorer,
  type JupyterFrontEnd,
  type JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Clipboard, ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, type NotebookPanel } from '@jupyterlab/notebook';
import {
  ITranslator,
  nullTranslator,
  type TranslationBundle
} from '@jupyterlab/translation';

// The panel is added at activation, so these small modules are needed at once.
/* eslint-disable jupyter/prefer-lazy-imports */
import { CommandIDs, NO_ARGS, PALETTE_CATEGORY } from '../commands';
import { themistoIcon } from '../icon';
import {
  cellSource,
  insertAfterLastRun,
  isFrontier,
  replaceActiveCell
} from '../notebook/cells';
import { codeCells } from '../notebook/cells';
import { focusNotebook } from '../notebook/focus';
import { toggleNotebookRecording } from '../notebook/recording';
import { type IPanelActions, PredictionPanel } from '../panel/panel';
/* eslint-enable jupyter/prefer-lazy-imports */
import {
  type INotebookLive,
  IPredictionSettings,
  IThemistoClient,
  IThemistoLive
} from '../tokens';

export const PANEL_ID = 'themisto-prediction-panel';

/**
 * The prediction panel in the right side bar, following the active notebook.
 */
export const panelPlugin: JupyterFrontEndPlugin<void> = {
  id: 'themisto-ext:panel',
  description:
    'A side panel with the predicted output and next cell, scores and runtime state, and any step under review.',
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
    settings: IPredictionSettings,
    tracker: INotebookTracker,
    client: IThemistoClient,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    translator: ITranslator | null
  ): void => {
    const trans = (translator ?? nullTranslator).load('themisto_ext');
    const panel = new PredictionPanel({
      live,
      settings,
      translator: translator ?? undefined,
      actions: panelActions(app, tracker, client, live)
    });
    // Whether the next cell is written already shows in the panel: follow
    // the active notebook's edits (the widget's signal: its model may not be
    // loaded yet).
    const edited = (): void => panel.notebookEdited();
    let watched: NotebookPanel | null = null;
    // So does the prediction of the active cell before it runs
    // (beforerun.ts): follow the selected cell too.
    tracker.currentChanged.connect((_, notebook) => {
      watched?.content.modelContentChanged.disconnect(edited);
      watched?.content.activeCellChanged.disconnect(edited);
      watched = notebook;
      watched?.content.modelContentChanged.connect(edited);
      watched?.content.activeCellChanged.connect(edited);
    });
    panel.id = PANEL_ID;
    panel.title.icon = themistoIcon;
    panel.title.caption = trans.__('Themisto predictions');
    app.shell.add(panel, 'right', { rank: 650 });
    restorer?.add(panel, PANEL_ID);
    addPanelCommands(app, panel, tracker, live, trans);
    palette?.addItem({
      command: CommandIDs.openPanel,
      category: PALETTE_CATEGORY
    });
    for (const command of [
      CommandIDs.reviewPrevious,
      CommandIDs.reviewNext,
      CommandIDs.reviewLive,
      CommandIDs.reviewActiveCell
    ]) {
      palette?.addItem({ command, category: PALETTE_CATEGORY });
    }
  }
};

/**
 * What the panel does in the notebook and through the server: insert or
 * copy a predicted cell, read cells, switch recording, fetch a prediction.
 */
function panelActions(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  client: IThemistoClient,
  live: IThemistoLive
): IPanelActions {
  const withNotebook = (act: (panel: NotebookPanel) => void): void => {
    const notebook = tracker.currentWidget;
    if (notebook) {
      act(notebook);
    }
  };
  return {
    insertBelow: text =>
      withNotebook(nb =>
        insertAfterLastRun(
          nb,
          text,
          live.store(nb.context.path)?.lastRunCell ?? null
        )
      ),
    replaceActive: text => withNotebook(nb => replaceActiveCell(nb, text)),
    copy: text => Clipboard.copyToSystem(text),
    cellCode: cellId => {
      const notebook = tracker.currentWidget;
      return notebook ? cellSource(notebook, cellId) : null;
    },
    activeCode: () => {
      const cell = tracker.currentWidget?.content.activeCell;
      return cell && cell.model.type === 'code'
        ? {
            cellId: cell.model.id,
            code: cell.model.sharedModel.getSource()
          }
        : null;
    },
    nextCellWritten: () => {
      const notebook = tracker.currentWidget;
      const store = notebook ? live.store(notebook.context.path) : null;
      return (
        !!notebook &&
        !!store &&
        !isFrontier(notebook.content, store.lastRunCell)
      );
    },
    toggleRecording: async () => {
      const notebook = tracker.currentWidget;
      if (notebook) {
        await toggleNotebookRecording(notebook, client, live);
      }
    },
    getPrediction: id => client.getPrediction(id),
    returnFocus: () => focusNotebook(app.shell, tracker)
  };
}

/**
 * Open the panel, review, step back and forth, return to live.
 */
function addPanelCommands(
  app: JupyterFrontEnd,
  panel: PredictionPanel,
  tracker: INotebookTracker,
  live: IThemistoLive,
  trans: TranslationBundle
): void {
  const commands = app.commands;
  const hasStore = (): boolean => live.current !== null;
  const reviewing = (): boolean => panel.view.mode === 'review';
  const reveal = (): void => {
    if (!panel.isVisible) {
      app.shell.activateById(panel.id);
    }
    focusNotebook(app.shell, tracker);
  };
  panel.viewChanged.connect(() => commands.notifyCommandChanged());

  commands.addCommand(CommandIDs.openPanel, {
    label: trans.__('Open Prediction Panel'),
    caption: trans.__("Show Themisto's prediction panel"),
    describedBy: NO_ARGS,
    execute: () => app.shell.activateById(panel.id)
  });
  commands.addCommand(CommandIDs.showStep, {
    label: args =>
      trans.__(
        'Review Step %1',
        typeof args.step === 'number' ? args.step : ''
      ),
    caption: trans.__('Show one step of the notebook in the prediction panel'),
    describedBy: {
      args: {
        type: 'object',
        properties: {
          step: { type: 'integer', minimum: 1 },
          trajectory: {
            type: 'string',
            description:
              'The trajectory of the step; the current one by default.'
          }
        },
        required: ['step']
      }
    },
    isEnabled: hasStore,
    execute: args => {
      if (typeof args.step === 'number') {
        const trajectory =
          typeof args.trajectory === 'string' ? args.trajectory : null;
        panel.showStep(args.step, trajectory ?? live.current?.trajectoryId);
        reveal();
      }
    }
  });
  addMoves(commands, panel, hasStore, reviewing, reveal, trans);
  commands.addCommand(CommandIDs.reviewActiveCell, {
    label: trans.__("Review the Active Cell's Step"),
    caption: trans.__(
      'Show the latest step of the active cell in the prediction panel'
    ),
    describedBy: NO_ARGS,
    isEnabled: hasStore,
    execute: () => {
      const found = activeCellStep(tracker, live);
      if (found) {
        panel.showStep(found.summary.step, found.trajectoryId);
        reveal();
      }
    }
  });
}

/**
 * Step back and forth, and back to live: each shows the panel.
 */
function addMoves(
  commands: JupyterFrontEnd['commands'],
  panel: PredictionPanel,
  hasStore: () => boolean,
  reviewing: () => boolean,
  reveal: () => void,
  trans: TranslationBundle
): void {
  const moves: [string, string, string, () => boolean, () => void][] = [
    [
      CommandIDs.reviewPrevious,
      trans.__('Review Previous Step'),
      trans.__('Show the step before in the prediction panel'),
      hasStore,
      () => panel.showPrevious()
    ],
    [
      CommandIDs.reviewNext,
      trans.__('Review Next Step'),
      trans.__('Show the step after in the prediction panel'),
      reviewing,
      () => panel.showNext()
    ],
    [
      CommandIDs.reviewLive,
      trans.__('Back to Live Predictions'),
      trans.__('Follow the notebook live in the prediction panel'),
      reviewing,
      () => panel.showLive()
    ]
  ];
  for (const [id, label, caption, isEnabled, move] of moves) {
    commands.addCommand(id, {
      label,
      caption,
      describedBy: NO_ARGS,
      isEnabled,
      execute: () => {
        move();
        reveal();
      }
    });
  }
}

/**
 * The latest step of the active cell of the current notebook, if it ran.
 */
function activeCellStep(
  tracker: INotebookTracker,
  live: IThemistoLive
): ReturnType<INotebookLive['cellStep']> {
  const notebook = tracker.currentWidget;
  const cell = notebook?.content.activeCell;
  const store = notebook ? live.store(notebook.context.path) : null;
  if (notebook && store) {
    store.recognize(codeCells(notebook.content));
  }
  return cell && store ? store.cellStep(cell.model.id) : null;
}
