/**
 * The Themisto JupyterLab extension: its plugins, and the tokens and client
 * other extensions may use.
 */
import type { JupyterFrontEndPlugin } from '@jupyterlab/application';

import { commandsPlugin } from './plugins/commands';
import {
  autoPredictPlugin,
  inlinePlugin,
  markersPlugin,
  notebookSwitchPlugin,
  speculationPlugin
} from './plugins/notebook';
import { panelPlugin } from './plugins/panel';
import { peoplePlugin } from './plugins/people';
import {
  clientPlugin,
  livePlugin,
  predictionSettingsPlugin
} from './plugins/services';
import { statusPlugin } from './plugins/status';

export { ThemistoApiError, ThemistoClient } from './api/client';
export type * from './api/records';
export type { INotebookLive } from './tokens';
export { IPredictionSettings, IThemistoClient, IThemistoLive } from './tokens';

const plugins: JupyterFrontEndPlugin<unknown>[] = [
  clientPlugin,
  statusPlugin,
  notebookSwitchPlugin,
  predictionSettingsPlugin,
  livePlugin,
  autoPredictPlugin,
  speculationPlugin,
  commandsPlugin,
  panelPlugin,
  peoplePlugin,
  markersPlugin,
  inlinePlugin
];

export default plugins;
