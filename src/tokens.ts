import { Token } from '@lumino/coreutils';
import { ISignal } from '@lumino/signaling';

import { LiveApi } from './liveapi';
import { IPredictorsInfo, LiveEvent, PredictionTask } from './livemodel';
import { NotebookLive } from './livestore';
import { IKernelRecording } from './model';
import { PredictionSettings } from './settings';

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

/**
 * A store event with the notebook store it was applied to.
 */
export interface ILiveEventArgs {
  store: NotebookLive;
  event: LiveEvent;
}

/**
 * The live data of the notebooks: one event stream per followed notebook,
 * parsed into per-notebook stores, plus the server's predictor set-up.
 */
export interface IThemistoLive {
  /**
   * Client of the live-data routes.
   */
  readonly api: LiveApi;

  /**
   * The store of the active notebook, if any.
   */
  readonly current: NotebookLive | null;

  /**
   * Emitted when the active notebook (hence `current`) changes.
   */
  readonly currentChanged: ISignal<IThemistoLive, NotebookLive | null>;

  /**
   * Emitted for each stream event after its store applied it.
   */
  readonly eventReceived: ISignal<IThemistoLive, ILiveEventArgs>;

  /**
   * The server's predictors and contexts; `null` until known.
   */
  readonly predictors: IPredictorsInfo | null;

  /**
   * Why the predictors could not be read, if they could not.
   */
  readonly predictorsError: string | null;

  /**
   * Emitted when `predictors` or `predictorsError` change.
   */
  readonly predictorsChanged: ISignal<IThemistoLive, void>;

  /**
   * The store of a notebook path, if it was ever followed.
   */
  store(path: string): NotebookLive | null;

  /**
   * Read the server's predictors again.
   */
  refreshPredictors(): Promise<void>;

  /**
   * Ask for a prediction for a notebook's kernel (the active notebook by
   * default); the result arrives on the stream.
   *
   * @throws {ThemistoApiError} when the server refuses or there is no kernel.
   */
  requestPrediction(
    task: PredictionTask,
    options?: { code?: string; store?: NotebookLive }
  ): Promise<void>;
}

/**
 * The live data token.
 */
export const IThemistoLive = new Token<IThemistoLive>(
  'themisto-ext:IThemistoLive',
  'Live steps, predictions and scores of the open notebooks.'
);

/**
 * The prediction settings token (schema/predictions.json).
 */
export const IPredictionSettings = new Token<PredictionSettings>(
  'themisto-ext:IPredictionSettings',
  'The user settings of the Themisto prediction features.'
);
