import { NotebookPanel } from '@jupyterlab/notebook';
import { Signal } from '@lumino/signaling';

import { NotebookLive } from '../live/store';
import { CellMarkers, MARKER_CLASS } from '../notebook/markers';
import { PredictionSettings } from '../settings';
import { FakeLive } from './fakelive';
import { PATH, prediction, scores, step } from './fixtures';

function fakeCell(id: string) {
  const node = document.createElement('div');
  return {
    model: { id },
    node,
    addClass: (name: string) => node.classList.add(name),
    removeClass: (name: string) => node.classList.remove(name)
  };
}

function fakePanel(ids: string[]) {
  return {
    context: { path: PATH },
    content: {
      widgets: ids.map(fakeCell),
      model: { cells: { changed: new Signal<unknown, unknown>({}) } }
    }
  } as unknown as NotebookPanel;
}

describe('CellMarkers', () => {
  it('badges scored cells by cell id and follows the settings', () => {
    const store = new NotebookLive(PATH);
    const live = new FakeLive(store);
    const settings = new PredictionSettings();
    const panel = fakePanel(['c1', 'c2']);
    const markers = new CellMarkers(panel, live, settings);
    store.addSteps([step(1), step(2)]);
    store.addPredictions([
      prediction('output', 2, { scores: scores(0.9) }),
      prediction('output', 2, { context: 'full', scores: scores(0.3) })
    ]);
    markers.update();
    const [first, second] = panel.content.widgets.map(c => c.node);
    expect(first.querySelector(`.${MARKER_CLASS}`)).toBeNull();
    const badge = second.querySelector<HTMLElement>(`.${MARKER_CLASS}`)!;
    expect(badge.textContent).toBe('RL 0.90');
    expect(badge.dataset.level).toBe('high');
    expect(badge.title).toContain('baseline · full (step 2)');
    expect(second.classList.contains('themisto-mod-marked')).toBe(true);

    settings.update({ markerScore: 'chrf', contexts: ['full'] });
    markers.update();
    expect(badge.textContent).toBe('ChrF 0.30');
    expect(badge.dataset.level).toBe('low');

    settings.update({ showCellMarkers: false });
    markers.update();
    expect(second.querySelector(`.${MARKER_CLASS}`)).toBeNull();
    expect(second.classList.contains('themisto-mod-marked')).toBe(false);
    markers.dispose();
    expect(markers.isDisposed).toBe(true);
  });
});
