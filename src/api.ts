import { ServerConnection } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

import { ThemistoApiError } from './errors';
import { IKernelRecording, IRecordingUpdate, isKernelRecording } from './model';
import { apiJson, apiUrl } from './request';
import { IThemistoClient } from './tokens';

export { ThemistoApiError } from './errors';
export { API_NAMESPACE } from './request';

/**
 * Typed client of the Themisto server REST API.
 */
export class ThemistoClient implements IThemistoClient {
  /**
   * @param serverSettings Settings of the Jupyter server; defaults to the
   *   page's settings.
   */
  constructor(serverSettings?: ServerConnection.ISettings) {
    this.serverSettings = serverSettings ?? ServerConnection.makeSettings();
  }

  /**
   * The server settings used for requests.
   */
  readonly serverSettings: ServerConnection.ISettings;

  get recordingChanged(): ISignal<IThemistoClient, IKernelRecording> {
    return this._recordingChanged;
  }

  getKernel(kernelId: string): Promise<IKernelRecording> {
    return this._requestKernel(kernelId, { method: 'GET' });
  }

  async setRecording(
    kernelId: string,
    recording: boolean
  ): Promise<IKernelRecording> {
    const body: IRecordingUpdate = { recording };
    const model = await this._requestKernel(kernelId, {
      method: 'PUT',
      body: JSON.stringify(body),
      headers: { 'Content-Type': 'application/json' }
    });
    this._recordingChanged.emit(model);
    return model;
  }

  private async _requestKernel(
    kernelId: string,
    init: RequestInit
  ): Promise<IKernelRecording> {
    const data = await this._request(['kernels', kernelId], init);
    if (!isKernelRecording(data)) {
      throw new ThemistoApiError(
        200,
        'Unexpected response from the Themisto server: ' + JSON.stringify(data)
      );
    }
    return data;
  }

  private _recordingChanged = new Signal<IThemistoClient, IKernelRecording>(
    this
  );

  /**
   * Send a request to `themisto/api/<path...>` and parse the JSON reply.
   */
  private _request(path: string[], init: RequestInit): Promise<unknown> {
    return apiJson(
      this.serverSettings,
      apiUrl(this.serverSettings, path),
      init
    );
  }
}
