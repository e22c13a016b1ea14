import { Token } from '@lumino/coreutils';
import { ISignal } from '@lumino/signaling';

import { IKernelRecording } from './model';

/**
 * Client of the Themisto server REST API.
 */
export interface IThemistoClient {
  /**
   * Emitted after any caller switched a kernel's recording on or off.
   */
  readonly recordingChanged: ISignal<IThemistoClient, IKernelRecording>;

  /**
   * Get the recording state of a kernel.
   *
   * @throws {ThemistoApiError} on a non-2xx response or a network error.
   */
  getKernel(kernelId: string): Promise<IKernelRecording>;

  /**
   * Start or stop recording a kernel.
   *
   * @throws {ThemistoApiError} on a non-2xx response or a network error.
   */
  setRecording(kernelId: string, recording: boolean): Promise<IKernelRecording>;
}

/**
 * The Themisto REST client token.
 */
export const IThemistoClient = new Token<IThemistoClient>(
  'themisto-ext:IThemistoClient',
  'A client of the Themisto server REST API.'
);
