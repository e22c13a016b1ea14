/**
 * The prediction panel in the right side bar.
 */
import {
  ILayoutRestorer,
  type JupyterFrontEnd,
  type JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Clipboard, ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, type NotebookPanel } from '@jupyterlab/notebook';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';

// The panel is added at activation, so these small modules are needed at once.
/* eslint-disable jupyter/prefer-lazy-imports */
import { CommandIDs, NO_ARGS, PALETTE_CATEGORY } from '../commands';
import { themistoIcon } from '../icon';
import {
  cellSource,
  insertCellBelow,
  replaceActiveCell
} from '../notebook/cells';
import { toggleNotebookRecording } from '../notebook/recording';
import { PredictionPanel } from '../panel/panel';
/* eslint-enable jupyter/prefer-lazy-imports */
import { IPredictionSettings, IThemistoClient, IThemistoLive } from '../tokens';

export const PANEL_ID = 'themisto-prediction-panel';

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
    settings: IPredictionSettings,
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
      translator: translator ?? undefined,
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
            await toggleNotebookRecording(notebook, client, live);
          }
        },
        getPrediction: id => client.getPrediction(id)
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
