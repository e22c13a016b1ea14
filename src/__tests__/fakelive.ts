import { Signal } from '@lumino/signaling';

import type { PredictionTask, PredictorsInfo } from '../api/records';
import type { NotebookLive } from '../live/store';
import type { IStepDetail } from '../live/types';
import type { ILiveEventArgs, INotebookLive, IThemistoLive } from '../tokens';
import { predictorsInfo } from './fixtures';

/**
 * An in-memory IThemistoLive around one store.
 */
export class FakeLive implements IThemistoLive {
  constructor(
    public current: NotebookLive | null,
    public predictors: PredictorsInfo | null = predictorsInfo({
      contexts: ['none', 'full']
    })
  ) {}

  predictorsError: string | null = null;
  requests: Array<{ task: PredictionTask; code?: string }> = [];
  kernelReads = 0;
  currentChanged: Signal<IThemistoLive, INotebookLive | null> = new Signal<
    IThemistoLive,
    INotebookLive | null
  >(this);
  storeAdded: Signal<IThemistoLive, INotebookLive> = new Signal<
    IThemistoLive,
    INotebookLive
  >(this);
  eventReceived: Signal<IThemistoLive, ILiveEventArgs> = new Signal<
    IThemistoLive,
    ILiveEventArgs
  >(this);
  predictorsChanged: Signal<IThemistoLive, void> = new Signal<
    IThemistoLive,
    void
  >(this);

  /**
   * Make another store current.
   */
  show(store: NotebookLive | null): void {
    this.current = store;
    this.currentChanged.emit(store);
  }

  store(path: string): NotebookLive | null {
    return this.current?.path === path ? this.current : null;
  }

  async replay(): Promise<INotebookLive> {
    throw new Error('FakeLive replays nothing');
  }

  async refreshPredictors(): Promise<void> {
    this.predictorsChanged.emit();
  }

  async refreshKernel(): Promise<void> {
    this.kernelReads++;
  }

  details: IStepDetail[] = [];
  loaded: number[] = [];

  async loadStep(
    store: INotebookLive,
    step: number,
    trajectoryId: string | null = store.trajectoryId
  ): Promise<IStepDetail> {
    this.loaded.push(step);
    return (
      this.details.find(d => d.step === step) ?? {
        trajectoryId,
        step,
        whole: null,
        next: null,
        predictions: []
      }
    );
  }

  async loadHistoryBefore(): Promise<void> {
    // Everything is held.
  }

  async requestPrediction(
    task: PredictionTask,
    options: { code?: string } = {}
  ): Promise<void> {
    this.requests.push({ task, ...options });
  }
}
