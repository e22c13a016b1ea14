import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { nullTranslator } from '@jupyterlab/translation';
import { Signal } from '@lumino/signaling';
import { Panel, Widget } from '@lumino/widgets';

import { NotebookLive } from '../live/store';
import { CellMarkers, FOOTER_CLASS, MARKER_CLASS } from '../notebook/markers';
import { PredictionSettings } from '../settings';
import { FakeLive } from './fakelive';
import { PATH, prediction, scores, step } from './fixtures';

const trans = nullTranslator.load('themisto_ext');

function fakeCell(id: string, source = '') {
  // A cell's layout as JupyterLab builds it: its parts, its own (empty)
  // footer last; ours goes before it.
  const cell = new Panel();
  cell.addWidget(new Widget());
  const own = new Widget();
  own.addClass('jp-CellFooter');
  cell.addWidget(own);
  return Object.assign(cell, {
    model: { id, type: 'code', sharedModel: { getSource: () => source } },
    ready: Promise.resolve()
  });
}

function fakePanel(ids: string[], sources: string[] = []) {
  return {
    context: { path: PATH },
    content: {
      widgets: ids.map((id, i) => fakeCell(id, sources[i])),
      model: { cells: { changed: new Signal<unknown, unknown>({}) } }
    }
  } as unknown as NotebookPanel;
}

function setup(ids: string[], sources: string[] = []) {
  const store = new NotebookLive(PATH);
  const live = new FakeLive(store);
  const settings = new PredictionSettings();
  const panel = fakePanel(ids, sources);
  const reviewed: Array<[number, string | null]> = [];
  const markers = new CellMarkers(panel, live, settings, trans, (s, t) =>
    reviewed.push([s, t])
  );
  const nodes = panel.content.widgets.map(c => c.node);
  return { store, live, settings, markers, nodes, reviewed };
}

describe('CellMarkers', () => {
  it('badges the cells of a reloaded notebook without cell ids (nbformat 4.4) by their code', () => {
    // The steps ran under ids JupyterLab gave at the last load; this load's differ.
    const { store, markers, nodes } = setup(
      ['load2-a', 'load2-b', 'load2-c'],
      ['x1 = 1', 'x2 = 2', 'edited since']
    );
    store.adopt('t1');
    store.addSteps([step(1), step(2), step(3)]);
    store.addPredictions([prediction('output', 2, { scores: scores(0.9) })]);
    markers.update();
    const badges = nodes.map(n => n.querySelector(`.${MARKER_CLASS}`));
    expect(
      badges.map(b => b?.getAttribute('data-themisto-step') ?? null)
    ).toEqual(['1', '2', null]);
    expect(badges[1]?.textContent).toContain('90');
  });

  it('badges each cell with the score of its latest step and follows the settings', () => {
    const { store, settings, markers, nodes, reviewed } = setup(['c1', 'c2']);
    store.adopt('t1');
    store.addSteps([step(1), step(2)]);
    store.addPredictions([
      prediction('output', 2, { scores: scores(0.9) }),
      prediction('output', 2, { context: 'full', scores: scores(0.3) })
    ]);
    markers.update();
    const [first, second] = nodes;
    const badge = second.querySelector<HTMLElement>(`.${MARKER_CLASS}`)!;
    expect(badge.textContent).toBe('RL 0.90');
    expect(badge.dataset.themistoStep).toBe('2');
    expect(badge.dataset.level).toBe('high');
    expect(badge.title).toContain('baseline · full (step 2)');
    expect(second.classList.contains('themisto-mod-marked')).toBe(true);
    // A step without prediction still has its badge: it says why.
    const plain = first.querySelector<HTMLElement>(`.${MARKER_CLASS}`)!;
    expect(plain.textContent).toBe('—');
    expect(plain.dataset.state).toBe('none');
    expect(plain.title).toBe(
      'No output prediction: none was recorded for this step'
    );

    badge.click();
    expect(reviewed).toEqual([[2, 't1']]);

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

  it('puts a footer under each executed cell: time, memory, score or why none', async () => {
    const { store, settings, markers, nodes } = setup(['c1', 'c2', 'c3']);
    store.addSteps([
      step(1, { execution_time: 0.012, memory_bytes: 98312192 }),
      step(2, { error: { ename: 'NameError', evalue: 'x' } })
    ]);
    store.addPredictions([
      prediction('output', 1, { scores: scores(0.5) }),
      prediction('next-cell', 2, {
        error: {
          type: 'PredictionSuperseded',
          message: 'the next cell started first'
        }
      }),
      prediction('output', 2, {
        error: {
          type: 'PredictionSuperseded',
          message: 'the next cell started first'
        }
      })
    ]);
    markers.update();
    await Promise.resolve();
    const footer = (i: number) =>
      nodes[i].querySelector<HTMLElement>(`.${FOOTER_CLASS}`);
    expect(footer(0)?.textContent).toBe(
      'step 1 · 12 ms · 93.8 MiB · output prediction: word overlap (ROUGE-L) 0.50 of 1'
    );
    // After the outputs, before JupyterLab's own footer.
    expect(
      footer(0)?.nextElementSibling?.classList.contains('jp-CellFooter')
    ).toBe(true);
    // Missed because the next cell started first (Run All): the footer says so.
    expect(footer(1)?.textContent).toBe(
      'step 2 · NameError in 10 ms · 1.00 KiB · no output prediction: superseded: the next cell started first'
    );
    expect(footer(1)?.dataset.state).toBe('missed');
    expect(footer(2)).toBeNull();
    settings.update({ showCellFooter: false });
    markers.update();
    expect(footer(0)).toBeNull();
    markers.dispose();
  });

  it('takes the old badge away while its cell runs again', () => {
    const { store, markers, nodes, live } = setup(['c1']);
    store.adopt('t1');
    store.addSteps([step(1, { cell_id: 'c1' })]);
    markers.update();
    const badge = () => nodes[0].querySelector<HTMLElement>(`.${MARKER_CLASS}`);
    expect(badge()?.dataset.themistoStep).toBe('1');
    const cell = { model: { id: 'c1', type: 'code' } };
    const notebook = (markers as unknown as { _panel: { content: unknown } })
      ._panel.content;
    (
      NotebookActions.executionScheduled as unknown as Signal<unknown, unknown>
    ).emit({ notebook, cell });
    markers.update();
    expect(badge()).toBeNull();
    expect(nodes[0].querySelector(`.${FOOTER_CLASS}`)).toBeNull();
    // Its new step lands: the new badge.
    store.addSteps([step(2, { cell_id: 'c1' })]);
    markers.update();
    expect(badge()?.dataset.themistoStep).toBe('2');
    expect(live.current).toBe(store);
    markers.dispose();
  });
});
