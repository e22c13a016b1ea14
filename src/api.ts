import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

import { apiErrorFromResponse, ThemistoApiError } from './errors';
import { IKernelRecording, IRecordingUpdate, isKernelRecording } from './model';
import { IThemistoClient } from './tokens';

export { ThemistoApiError } from './errors';

/**
 * The URL namespace of the Themisto server extension.
 */
export const API_NAMESPACE = 'themisto/api';

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
    const data = await this._request(
      ['kernels', encodeURIComponent(kernelId)],
      init
    );
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
  private async _request(path: string[], init: RequestInit): Promise<unknown> {
    const url = URLExt.join(
      this.serverSettings.baseUrl,
      API_NAMESPACE,
      ...path
    );
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(
        url,
        init,
        this.serverSettings
      );
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new ThemistoApiError(0, `Network error: ${reason}`);
    }
    const text = await response.text();
    if (!response.ok) {
      throw apiErrorFromResponse(response.status, response.statusText, text);
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new ThemistoApiError(
        response.status,
        'Invalid JSON response from the Themisto server'
      );
    }
  }
}
