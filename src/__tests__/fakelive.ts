import { Signal } from '@lumino/signaling';

import { LiveApi } from '../liveapi';
import { IPredictorsInfo, PredictionTask } from '../livemodel';
import { NotebookLive } from '../livestore';
import { ILiveEventArgs, IThemistoLive } from '../tokens';

/**
 * An in-memory IThemistoLive around one store.
 */
export class FakeLive implements IThemistoLive {
  constructor(
    public current: NotebookLive | null,
    public predictors: IPredictorsInfo | null = {
      predictors: ['baseline'],
      contexts: ['none', 'full'],
      live: true
    }
  ) {}

  api = {} as LiveApi;
  predictorsError: string | null = null;
  requests: Array<{ task: PredictionTask; code?: string }> = [];
  currentChanged: Signal<IThemistoLive, NotebookLive | null> = new Signal<
    IThemistoLive,
    NotebookLive | null
  >(this);
  eventReceived: Signal<IThemistoLive, ILiveEventArgs> = new Signal<
    IThemistoLive,
    ILiveEventArgs
  >(this);
  predictorsChanged: Signal<IThemistoLive, void> = new Signal<
    IThemistoLive,
    void
  >(this);

  store(path: string): NotebookLive | null {
    return this.current?.path === path ? this.current : null;
  }

  async refreshPredictors(): Promise<void> {
    this.predictorsChanged.emit();
  }

  async requestPrediction(
    task: PredictionTask,
    options: { code?: string } = {}
  ): Promise<void> {
    this.requests.push({ task, ...options });
  }
}
