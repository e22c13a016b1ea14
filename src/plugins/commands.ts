/**
 * The notebook commands: export, predict now, toggle recording (palette and
 * the Themisto main menu of schema/commands.json).
 */
import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';

// Commands are added at activation, so the module is needed at once.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { addCommands } from '../commands';
import { IThemistoClient, IThemistoLive } from '../tokens';

export const commandsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'themisto-ext:commands',
  description: "Adds Themisto's notebook commands to the palette and menu.",
  autoStart: true,
  requires: [INotebookTracker, IThemistoClient, IThemistoLive],
  optional: [ICommandPalette, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    client: IThemistoClient,
    live: IThemistoLive,
    palette: ICommandPalette | null,
    translator: ITranslator | null
  ): void =>
    addCommands(
      app,
      tracker,
      client,
      live,
      palette,
      (translator ?? nullTranslator).load('themisto_ext')
    )
};
