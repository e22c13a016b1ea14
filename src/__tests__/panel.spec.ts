import { Widget } from '@lumino/widgets';

import type { Prediction } from '../api/records';
import { NotebookLive } from '../live/store';
import { IPanelActions, PredictionPanel } from '../panel/panel';
import { PredictionSettings } from '../settings';
import { FakeLive } from './fakelive';
import {
  PATH,
  localModel,
  predictingEvent,
  prediction,
  predictionEvent,
  predictorsInfo,
  scoredEvent,
  scores,
  speculatedEvent,
  step,
  stepEvent
} from './fixtures';
import { codeHash } from '../live/cellmatch';

class Actions implements IPanelActions {
  inserted: string[] = [];
  replaced: string[] = [];
  copied: string[] = [];
  toggles = 0;
  insertBelow(text: string): void {
    this.inserted.push(text);
  }
  replaceActive(text: string): void {
    this.replaced.push(text);
  }
  copy(text: string): void {
    this.copied.push(text);
  }
  cellCode(cellId: string): string | null {
    return `code of ${cellId}`;
  }
  active: { cellId: string; code: string } | null = null;
  activeCode(): { cellId: string; code: string } | null {
    return this.active;
  }
  written = false;
  nextCellWritten(): boolean {
    return this.written;
  }
  async toggleRecording(): Promise<void> {
    this.toggles++;
  }
  focusReturns = 0;
  returnFocus(): void {
    this.focusReturns++;
  }
  fetched: string[] = [];
  async getPrediction(id: string): Promise<Prediction> {
    this.fetched.push(id);
    if (id === 'missing') {
      throw new Error('Unknown prediction missing');
    }
    return {
      ...prediction('output', 2, { id }),
      prompt: { system: 'You predict outputs.', user: 'print(x)' },
      raw: 'answer'
    };
  }
}

function setup(store: NotebookLive | null = new NotebookLive(PATH)) {
  const live = new FakeLive(store);
  const settings = new PredictionSettings();
  const actions = new Actions();
  const panel = new PredictionPanel({ live, settings, actions });
  Widget.attach(panel, document.body);
  panel.flush();
  const q = (selector: string) =>
    panel.node.querySelector<HTMLElement>(selector);
  const qa = (selector: string) =>
    Array.from(panel.node.querySelectorAll<HTMLElement>(selector));
  return { live, settings, actions, panel, store, q, qa };
}

function click(node: Element | null): void {
  (node as HTMLElement).click();
}

describe('PredictionPanel', () => {
  afterEach(() => {
    document.body.innerHTML = '';
  });

  it('asks for a notebook when there is none', () => {
    const { panel, q } = setup(null);
    expect(panel.node.dataset.state).toBe('no-notebook');
    expect(q('.themisto-Empty')?.textContent).toContain('Open a notebook');
    panel.dispose();
  });

  it('shows predicting, the prediction, then the real output and scores', () => {
    const { panel, store, q, qa } = setup();
    store!.apply(stepEvent(1));
    store!.apply(predictingEvent('output', 2, 'baseline', 'none'));
    panel.flush();
    let cards = qa('.themisto-OutputSection .themisto-Card');
    expect(cards).toHaveLength(2);
    expect(cards.map(c => c.dataset.state)).toEqual([
      'predicting',
      'predicting'
    ]);
    expect(cards[0].textContent).toContain('predicting…');

    store!.apply(predictionEvent(prediction('output', 2, { answer: 'out 3' })));
    panel.flush();
    cards = qa('.themisto-OutputSection .themisto-Card');
    expect(cards[0].dataset.state).toBe('done');
    expect(cards[0].dataset.landed).toBe('false');
    expect(cards[0].querySelector('.themisto-Predicted')?.textContent).toBe(
      'out 3'
    );

    store!.apply(stepEvent(2));
    store!.apply(scoredEvent(prediction('output', 2), 'out 2', scores(0.8)));
    panel.flush();
    const card = qa('.themisto-OutputSection .themisto-Card')[0];
    expect(card.dataset.landed).toBe('true');
    expect(card.querySelector('.themisto-Actual')?.textContent).toBe('out 2');
    expect(card.querySelector('del')?.textContent).toBe('3');
    expect(card.querySelector('ins')?.textContent).toBe('2');
    const chips = card.querySelector<HTMLElement>('.themisto-Scores');
    expect(chips?.dataset.rougeL).toBe('0.8');
    expect(chips?.textContent).toContain('ROUGE-L 0.80');
    expect(
      q('.themisto-Scoreboard tr[data-task="output"]')?.textContent
    ).toContain('0.80');
    expect(q('.themisto-Plot')).not.toBeNull();
    expect(
      q('.themisto-RuntimeSection tr[data-name="x2"]')?.textContent
    ).toContain('int');
    panel.dispose();
  });

  it("shows the selected cell's prediction before it runs, as such", () => {
    const { panel, store, actions, q, qa } = setup();
    store!.apply(stepEvent(1));
    store!.apply(predictionEvent(prediction('output', 1, { answer: 'one' })));
    const code = 'x + 1';
    const made = prediction('output', 2, { answer: '3', cell_id: 'c2' });
    store!.apply(speculatedEvent(made, codeHash(code)));
    // Another cell selected: the last run's output, as before.
    actions.active = { cellId: 'c9', code: 'other' };
    panel.flush();
    expect(q('.themisto-OutputSection')?.dataset.beforeRun).toBeUndefined();
    // The cell just run, with the text it ran: its own result, not a rerun's.
    const ran = step(1).code;
    store!.apply(
      speculatedEvent(prediction('output', 2, { answer: 'x' }), codeHash(ran))
    );
    actions.active = { cellId: step(1).cell_id ?? 'c1', code: ran };
    panel.flush();
    expect(q('.themisto-OutputSection')?.dataset.beforeRun).toBeUndefined();
    store!.apply(speculatedEvent(made, codeHash(code)));
    expect(panel.model.store).toBe(store);
    // The cell predicted selected, with that text: "If you run this cell".
    actions.active = { cellId: 'c2', code };
    panel.notebookEdited();
    panel.flush();
    const section = q('.themisto-OutputSection');
    expect(section?.dataset.beforeRun).toBe('true');
    expect(section?.dataset.targetStep).toBe('2');
    expect(section?.textContent).toContain('If you run this cell');
    const cards = qa('.themisto-OutputSection .themisto-Card');
    expect(cards.map(c => c.dataset.beforeRun)).toEqual(['true', 'true']);
    expect(cards[0].querySelector('.themisto-Predicted')?.textContent).toBe(
      '3'
    );
    expect(cards[0].textContent).toContain('if the cell runs with this text');
    // Its text edited: not this prediction's cell any more.
    actions.active = { cellId: 'c2', code: 'x + 2' };
    panel.flush();
    expect(q('.themisto-OutputSection')?.dataset.beforeRun).toBeUndefined();
    // It runs with the text predicted: its own prediction, the usual section.
    actions.active = { cellId: 'c2', code };
    store!.apply(predictingEvent('output', 2, 'baseline', 'none'));
    panel.flush();
    expect(q('.themisto-OutputSection')?.dataset.beforeRun).toBeUndefined();
    // A step landed since: an old speculation is not shown.
    store!.apply(stepEvent(2));
    expect(store!.speculation).toBeNull();
    panel.dispose();
  });

  it('labels references as references and a copy of the previous output as a copy', () => {
    const { panel, store, qa } = setup();
    store!.apply(stepEvent(1));
    store!.apply(
      predictionEvent(
        prediction('output', 2, {
          answer: 'out 1',
          model: 'hybrid:copy-previous'
        })
      )
    );
    panel.flush();
    const [copy, other] = qa('.themisto-OutputSection .themisto-Card');
    // `baseline` is a reference predictor: its column says so.
    expect(copy.querySelector('.themisto-Card-title')?.textContent).toBe(
      'baseline · none · reference'
    );
    expect(copy.dataset.copy).toBe('true');
    expect(copy.querySelector('.themisto-Label')?.textContent).toBe(
      'The previous output, copied (a reference, not a prediction)'
    );
    expect(other.dataset.copy).toBe('false');
    panel.dispose();
  });

  it('says a predictor abstained instead of showing an empty prediction', () => {
    const { panel, store, qa } = setup();
    store!.apply(stepEvent(1));
    const none = { answer: '', abstained: true, model: 'hybrid:m' };
    store!.apply(predictionEvent(prediction('next-cell', 2, none)));
    panel.flush();
    const [next] = qa('.themisto-NextSection .themisto-Card');
    expect(next.dataset.abstained).toBe('true');
    expect(next.textContent).toContain('the predictor abstained');
    expect(next.querySelector('.themisto-Insert')).toBeNull();
    store!.apply(predictionEvent(prediction('output', 2, none)));
    panel.flush();
    const [output] = qa('.themisto-OutputSection .themisto-Card');
    expect(output.dataset.abstained).toBe('true');
    expect(output.textContent).toContain('the predictor abstained');
    expect(output.querySelector('.themisto-Predicted')).toBeNull();
    panel.dispose();
  });

  it('fetches and shows a prompt only when asked to, and keeps it open', async () => {
    const { panel, store, actions, qa } = setup();
    store!.apply(stepEvent(1));
    store!.apply(predictionEvent(prediction('output', 2, { answer: 'out 2' })));
    panel.flush();
    expect(actions.fetched).toEqual([]);
    const [details] = qa('.themisto-OutputSection .themisto-Prompt');
    expect(details.querySelector('summary')?.textContent).toBe('Show prompt');
    (details as HTMLDetailsElement).open = true;
    details.dispatchEvent(new Event('toggle'));
    await new Promise(resolve => setTimeout(resolve, 0));
    panel.flush();
    expect(actions.fetched).toEqual(['output-2-baseline-none']);
    expect(details.querySelector('.themisto-PromptSystem')?.textContent).toBe(
      'You predict outputs.'
    );
    expect(details.querySelector('.themisto-PromptUser')?.textContent).toBe(
      'print(x)'
    );

    // A redraw (the step landed) keeps it open, without fetching again:
    // the virtual DOM keeps the node itself in place.
    store!.apply(stepEvent(2));
    panel.flush();
    const [again] = qa('.themisto-OutputSection .themisto-Prompt');
    expect(again).toBe(details);
    expect((again as HTMLDetailsElement).open).toBe(true);
    await new Promise(resolve => setTimeout(resolve, 0));
    panel.flush();
    expect(again.querySelector('.themisto-PromptUser')?.textContent).toBe(
      'print(x)'
    );
    expect(actions.fetched).toEqual(['output-2-baseline-none']);
    panel.dispose();
  });

  it('says when a prompt cannot be read', async () => {
    const { panel, store, qa } = setup();
    store!.apply(
      predictionEvent(prediction('next-cell', 1, { id: 'missing' }))
    );
    panel.flush();
    const [details] = qa('.themisto-NextSection .themisto-Prompt');
    (details as HTMLDetailsElement).open = true;
    details.dispatchEvent(new Event('toggle'));
    await new Promise(resolve => setTimeout(resolve, 0));
    panel.flush();
    expect(details.querySelector('[role="alert"]')?.textContent).toContain(
      'Unknown prediction missing'
    );
    panel.dispose();
  });

  it('offers the next cell with insert, replace and copy', () => {
    const { panel, store, actions, qa } = setup();
    store!.apply(stepEvent(1));
    store!.apply(
      predictionEvent(prediction('next-cell', 2, { answer: 'y = 2' }))
    );
    panel.flush();
    const card = qa('.themisto-NextSection .themisto-Card')[0];
    expect(card.querySelector('.themisto-NextCode')?.textContent).toBe('y = 2');
    click(card.querySelector('.themisto-Insert'));
    click(card.querySelector('.themisto-Replace'));
    click(card.querySelector('.themisto-Copy'));
    expect(actions.inserted).toEqual(['y = 2']);
    expect(actions.replaced).toEqual(['y = 2']);
    expect(actions.copied).toEqual(['y = 2']);
    // Copy says it copied; every click gives the focus back.
    panel.flush();
    expect(card.querySelector('.themisto-Copy')?.textContent).toBe('Copied');
    expect(actions.focusReturns).toBe(3);
    // A press on a button never takes the focus from the notebook.
    const press = new MouseEvent('mousedown', {
      bubbles: true,
      cancelable: true
    });
    card.querySelector('.themisto-Insert')!.dispatchEvent(press);
    expect(press.defaultPrevented).toBe(true);
    panel.dispose();
  });

  it('predicts no next cell where it is written already, and says so', () => {
    const { panel, store, actions, q } = setup();
    store!.apply(stepEvent(1));
    store!.apply(predictionEvent(prediction('next-cell', 2, { answer: 'y' })));
    actions.written = true;
    panel.flush();
    const next = q('.themisto-NextSection');
    expect(next?.dataset.frontier).toBe('false');
    expect(next?.querySelector('.themisto-Written')?.textContent).toContain(
      'The next cell is written already'
    );
    expect(next?.querySelectorAll('.themisto-Card')).toHaveLength(0);
    // The output section is not concerned.
    expect(q('.themisto-OutputSection')?.dataset.frontier).toBeUndefined();
    // An edit that changes nothing of it redraws nothing.
    const update = jest.spyOn(panel, 'update');
    panel.notebookEdited();
    expect(update).not.toHaveBeenCalled();
    // At the frontier again (the cell below emptied): redrawn, the
    // prediction shows.
    actions.written = false;
    panel.notebookEdited();
    expect(update).toHaveBeenCalledTimes(1);
    panel.flush();
    expect(q('.themisto-NextSection .themisto-NextCode')?.textContent).toBe(
      'y'
    );
    panel.dispose();
  });

  it('numbers the next cell after the one running, not the running one', () => {
    const { panel, store, q } = setup();
    store!.apply(stepEvent(1));
    store!.apply(
      predictionEvent(prediction('next-cell', 2, { answer: 'y = 2' }))
    );
    panel.flush();
    expect(q('.themisto-NextSection h3')?.textContent).toBe(
      'Next cell (step 2)'
    );
    // Cell 2 starts: its output is predicted; the next cell is step 3.
    store!.apply(predictingEvent('output', 2, 'baseline', 'none'));
    panel.flush();
    expect(q('.themisto-NextSection h3')?.textContent).toBe(
      'Next cell (step 3)'
    );
    expect(q('.themisto-NextSection')?.textContent).toContain(
      'Predicted when step 2 finishes.'
    );
    panel.dispose();
  });

  it('reviews any step: its output, the next cell predicted after it, its runtime', async () => {
    const { panel, store, live, q, qa } = setup();
    store!.adopt('t1');
    store!.addSteps([step(1), step(2), step(3)]);
    const superseded = {
      type: 'PredictionSuperseded',
      message: 'the next cell started first'
    };
    live.details = [
      {
        trajectoryId: 't1',
        step: 2,
        whole: step(2, { output: 'out 2' }),
        next: step(3, { code: 'x3 = 3' }),
        predictions: [
          prediction('output', 2, { answer: 'out 2', scores: scores(1) }),
          prediction('next-cell', 3, { answer: 'x3 = 4', scores: scores(0.5) }),
          prediction('next-cell', 3, { context: 'full', error: superseded })
        ]
      }
    ];
    const views: string[] = [];
    panel.viewChanged.connect((_, view) => views.push(view.mode));
    panel.showStep(2);
    await Promise.resolve();
    panel.flush();
    const view = q('[data-themisto-view-step="2"]');
    expect(view).not.toBeNull();
    expect(q('.themisto-OutputSection h3')?.textContent).toBe(
      'Output of step 2'
    );
    expect(q('.themisto-OutputSection .themisto-Actual')?.textContent).toBe(
      'out 2'
    );
    expect(q('.themisto-NextSection h3')?.textContent).toBe(
      'Next cell (step 3), predicted after step 2'
    );
    const [none, full] = qa('.themisto-NextSection .themisto-Card');
    expect(none.querySelector('.themisto-ActualCode')?.textContent).toBe(
      'x3 = 3'
    );
    expect(none.querySelector('.themisto-Insert')).toBeNull();
    expect(full.querySelector('.themisto-Missed')?.textContent).toBe(
      'No prediction: superseded: the next cell started first'
    );
    expect(full.querySelector('.themisto-Retry')).toBeNull();
    // No prediction at all for a column: said, not "predicting".
    expect(
      qa('.themisto-OutputSection .themisto-Card')[1].textContent
    ).toContain('No prediction: none was recorded for this step');
    expect(q('.themisto-RuntimeSection h3')?.textContent).toBe(
      'Runtime after step 2'
    );

    // Previous, next, and back to live.
    click(q('.themisto-Review-previous'));
    panel.flush();
    expect(q('[data-themisto-view-step="1"]')).not.toBeNull();
    panel.showNext();
    panel.showNext();
    panel.flush();
    expect(q('[data-themisto-view-step="3"]')).not.toBeNull();
    panel.showNext();
    panel.flush();
    expect(panel.view.mode).toBe('live');
    expect(q('[data-themisto-view-step]')).toBeNull();
    panel.showPrevious();
    expect(panel.view).toMatchObject({ mode: 'review', step: 3 });
    panel.flush();
    click(q('.themisto-Review-live'));
    expect(panel.view.mode).toBe('live');
    expect(views).toEqual([
      'review',
      'review',
      'review',
      'review',
      'live',
      'review',
      'live'
    ]);
    expect(live.loaded).toEqual([2, 1, 2, 3, 3]);
    panel.dispose();
  });

  it('shows a provider error with a retry that asks again', () => {
    const { panel, store, live, qa } = setup();
    store!.kernelId = 'k1';
    store!.apply(stepEvent(1));
    store!.apply(
      predictionEvent(
        prediction('output', 2, {
          error: { type: 'ProviderError', message: 'quota exceeded' }
        })
      )
    );
    panel.flush();
    const card = qa('.themisto-OutputSection .themisto-Card')[0];
    expect(card.dataset.state).toBe('error');
    expect(card.textContent).toContain('ProviderError: quota exceeded');
    click(card.querySelector('.themisto-Retry'));
    expect(live.requests).toEqual([{ task: 'output', code: 'code of c2' }]);

    // Once the cell has run, a retry would predict another step.
    store!.apply(stepEvent(2));
    panel.flush();
    const after = qa('.themisto-OutputSection .themisto-Card')[0];
    expect(after.querySelector('.themisto-Retry')).toBeNull();
    panel.dispose();
  });

  it('says when no predictor is configured or recording is off', () => {
    const { panel, live, store, actions, q } = setup();
    live.predictors = predictorsInfo({ predictors: [], contexts: [] });
    store!.recording = false;
    live.predictorsChanged.emit();
    panel.flush();
    expect(q('[data-kind="no-predictor"]')).not.toBeNull();
    expect(q('.themisto-PredictNow')?.hasAttribute('disabled')).toBe(true);
    expect(q('.themisto-OutputSection')?.textContent).toContain(
      'no predictor is configured'
    );
    const off = q('[data-kind="recording-off"]');
    expect(off).not.toBeNull();
    click(off!.querySelector('button'));
    expect(actions.toggles).toBe(1);
    panel.dispose();
  });

  it('says why the embedded model gives no predictions', () => {
    const { panel, live, q } = setup();
    const reason = 'the model process died while loading the model (signal 4)';
    live.predictors = predictorsInfo({
      predictors: ['local'],
      contexts: ['full'],
      local_models: [localModel('local', 'failed', reason)]
    });
    live.predictorsChanged.emit();
    panel.flush();
    const banner = q('[data-kind="model-off"]');
    expect(banner?.textContent).toContain(reason);
    let refreshed = 0;
    live.predictorsChanged.connect(() => refreshed++);
    click(banner!.querySelector('button'));
    expect(refreshed).toBe(1);
    panel.dispose();
  });

  it('asks for the next cell from the header', () => {
    const { panel, store, live, q } = setup();
    store!.kernelId = 'k1';
    panel.flush();
    click(q('.themisto-PredictNow'));
    expect(live.requests).toEqual([{ task: 'next-cell' }]);
    panel.dispose();
  });

  it('follows the settings: filters, layout and manual mode', () => {
    const { panel, store, settings, qa } = setup();
    store!.apply(stepEvent(1));
    store!.apply(predictingEvent('next-cell', 2));
    settings.update({ contexts: ['full'], layout: 'stacked' });
    panel.flush();
    expect(panel.node.dataset.layout).toBe('stacked');
    const cards = qa('.themisto-NextSection .themisto-Card');
    expect(cards.map(c => c.dataset.context)).toEqual(['full']);

    settings.update({ autoPredict: false });
    panel.flush();
    expect(qa('.themisto-NextSection .themisto-Card')).toHaveLength(0);
    store!.markRequested('next-cell');
    panel.flush();
    expect(qa('.themisto-NextSection .themisto-Card')).toHaveLength(2);
    panel.dispose();
  });

  it('sorts the runtime table', () => {
    const { panel, store, qa } = setup();
    store!.addSteps([
      step(1, {
        runtime_variables: {
          b: { type: 'int', size: 10, size_exact: true, repr: '1' },
          a: { type: 'str', size: 99, size_exact: false, repr: "'x'" }
        }
      })
    ]);
    panel.flush();
    const names = () =>
      qa('.themisto-VariablesTable tbody tr').map(r => r.dataset.name);
    expect(names()).toEqual(['a', 'b']);
    click(qa('.themisto-Sort[data-key="size"]')[0]);
    panel.flush();
    expect(names()).toEqual(['a', 'b']);
    click(qa('.themisto-Sort[data-key="size"]')[0]);
    panel.flush();
    expect(names()).toEqual(['b', 'a']);
    panel.dispose();
  });
});
