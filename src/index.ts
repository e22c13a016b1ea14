import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { Signal } from '@lumino/signaling';

import { ThemistoClient } from './api';
// The status item is registered synchronously at activation, so it is needed at once.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { DEFAULT_REFRESH_DELAY, ThemistoStatusItem } from './statusbar';
import { IThemistoClient } from './tokens';
import { applyNotebookRecording } from './notebookswitch';
import {
  autoPredictPlugin,
  commandsPlugin,
  livePlugin,
  predictionSettingsPlugin
} from './liveplugins';
import { inlinePlugin, markersPlugin, panelPlugin } from './uiplugins';

export { ThemistoApiError, ThemistoClient } from './api';
export { IKernelRecording } from './model';
export { IPredictionSettings, IThemistoClient, IThemistoLive } from './tokens';

/**
 * Provides the client of the Themisto server REST API.
 */
const clientPlugin: JupyterFrontEndPlugin<IThemistoClient> = {
  id: 'themisto-ext:client',
  description: 'Provides a client of the Themisto server REST API.',
  autoStart: true,
  provides: IThemistoClient,
  activate: (app: JupyterFrontEnd): IThemistoClient =>
    new ThemistoClient(app.serviceManager.serverSettings)
};

/**
 * Status bar item showing and toggling the recording state of the active
 * notebook's kernel. Its settings schema is `schema/status.json`.
 */
const statusPlugin: JupyterFrontEndPlugin<void> = {
  id: 'themisto-ext:status',
  description:
    "Shows Themisto's recording state of the active notebook kernel.",
  autoStart: true,
  requires: [IStatusBar, INotebookTracker, IThemistoClient],
  optional: [ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    statusBar: IStatusBar,
    tracker: INotebookTracker,
    client: IThemistoClient,
    settingRegistry: ISettingRegistry | null
  ): void => {
    const item = new ThemistoStatusItem({ client, tracker });
    const activeStateChanged = new Signal<ThemistoStatusItem, void>(item);
    let showStatusItem = true;

    statusBar.registerStatusItem(statusPlugin.id, {
      item,
      align: 'left',
      rank: 100,
      isActive: () => showStatusItem,
      activeStateChanged
    });

    if (settingRegistry) {
      const apply = (settings: ISettingRegistry.ISettings): void => {
        showStatusItem = settings.get('showStatusItem').composite !== false;
        const delay = settings.get('refreshDelay').composite;
        item.refreshDelay =
          typeof delay === 'number' && delay >= 0
            ? delay
            : DEFAULT_REFRESH_DELAY;
        activeStateChanged.emit();
      };
      settingRegistry
        .load(statusPlugin.id)
        .then(settings => {
          apply(settings);
          settings.changed.connect(apply);
        })
        .catch(reason => {
          console.error(
            'Failed to load settings for themisto-ext:status.',
            reason
          );
        });
    }
  }
};

/**
 * Honours a notebook's `themisto.recording` metadata for every kernel it uses.
 */
const notebookSwitchPlugin: JupyterFrontEndPlugin<void> = {
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

const plugins: JupyterFrontEndPlugin<unknown>[] = [
  clientPlugin,
  statusPlugin,
  notebookSwitchPlugin,
  predictionSettingsPlugin,
  livePlugin,
  autoPredictPlugin,
  commandsPlugin,
  panelPlugin,
  markersPlugin,
  inlinePlugin
];

export default plugins;
