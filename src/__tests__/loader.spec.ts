import { HISTORY_PAGE, HistoryLoader } from '../live/loader';
import type { NotebookLive } from '../live/store';
import type { IThemistoClient } from '../tokens';

/**
 * What the loader reads of a store: its trajectory and the steps it holds.
 */
function fakeStore(last: number) {
  const store = {
    trajectoryId: 't1',
    history: { first: last, last },
    addSummaries(steps: Array<{ step: number }>) {
      store.history.first = Math.min(
        store.history.first,
        ...steps.map(s => s.step)
      );
    }
  };
  return store;
}

/**
 * A client whose history pages arrive only when `release()` is called.
 */
function slowClient() {
  const asked: Array<[number, number]> = [];
  const waiting: Array<() => void> = [];
  const client = {
    async getHistory(id: string, since: number, limit: number) {
      asked.push([since, limit]);
      await new Promise<void>(resolve => waiting.push(resolve));
      const steps = [];
      for (let n = since + 1; n <= since + limit; n++) {
        steps.push({ step: n });
      }
      return { steps, next_since_step: null };
    }
  } as unknown as IThemistoClient;
  const release = async (): Promise<void> => {
    for (let i = 0; i < 50 && waiting.length === 0; i++) {
      await new Promise(resolve => setTimeout(resolve, 0));
    }
    waiting.shift()?.();
  };
  return { client, asked, release };
}

describe('HistoryLoader', () => {
  it('reads further back only after the walk under way, without asking twice', async () => {
    const last = 3 * HISTORY_PAGE;
    const store = fakeStore(last);
    const { client, asked, release } = slowClient();
    const loader = new HistoryLoader(client);
    const live = store as unknown as NotebookLive;
    const walk = loader.backfill(live, HISTORY_PAGE + 1); // one page more
    let reviewed = false;
    const review = loader.loadBefore(live, 1).then(() => (reviewed = true));
    await release(); // the walk's page
    await walk;
    expect(reviewed).toBe(false);
    await release(); // review's pages, from where the walk stopped
    await release();
    await review;
    expect(store.history.first).toBe(1);
    expect(asked).toEqual([
      [last - 1 - HISTORY_PAGE, HISTORY_PAGE],
      [last - 1 - 2 * HISTORY_PAGE, HISTORY_PAGE],
      [0, last - 1 - 2 * HISTORY_PAGE]
    ]);
  });
});
