import { expect, test } from '@jupyterlab/galata';
import { Page, Request, WebSocketRoute } from '@playwright/test';

import { predictorsInfo } from '../../src/__tests__/fixtures';
import { cellId, cellSource, openPanel, screenshotThemes } from './helpers';
import {
  checked,
  expectNoDrift,
  readHistoryPage,
  readLiveEvent,
  readPrediction,
  readPredictionsPage,
  readPredictionsStarted,
  readPredictorsInfo,
  readStepsPage,
  readTrajectoryPage,
  reply
} from './scripted';

/*
 * The panel's states against a scripted server: the prediction routes and
 * the event bus's WebSocket are answered by the test (the rest of the server
 * is real), so states that the fast baseline predictor hides (predicting…,
 * provider errors, Retry) are reached at will. Every scripted reply and
 * event is checked against its JSON Schema (scripted.ts).
 */

const TRAJECTORY = 'scripted-trajectory';

const LIVE_EVENT_SCHEMA_ID =
  'https://themisto-ext.invalid/schemas/live-bus.schema.json';

interface IScript {
  predictors: string[];
  /** The page's event bus WebSocket, once it connected (scripted). */
  bus?: WebSocketRoute;
  seq?: number;
  steps: Array<Record<string, unknown>>;
  requests: unknown[];
  /** Whole predictions (with their prompt) by id: GET predictions/{id}. */
  predictions?: Record<string, Record<string, unknown>>;
  /** Ids of the predictions read whole. */
  fetched?: string[];
}

/**
 * Send live events to the page as jupyter_server's event bus would: each
 * numbered, as its JSON text under the live bus schema's id.
 */
async function send(
  state: IScript,
  events: Array<Record<string, unknown>>
): Promise<void> {
  await expect.poll(() => state.bus !== undefined).toBe(true);
  for (const event of events) {
    state.seq = (state.seq ?? 0) + 1;
    state.bus!.send(
      JSON.stringify({
        schema_id: LIVE_EVENT_SCHEMA_ID,
        type: event.type,
        event: JSON.stringify(
          checked(readLiveEvent, { ...event, seq: state.seq })
        )
      })
    );
  }
}

/** The active notebook's kernel id, once it has one. */
async function kernelOf(page: Page): Promise<string> {
  const read = () =>
    page.evaluate(() => {
      const widget = window.jupyterapp.shell.currentWidget as unknown as {
        sessionContext: { session: { kernel: { id: string } | null } | null };
      };
      return widget.sessionContext.session?.kernel?.id ?? '';
    });
  await expect.poll(read).not.toBe('');
  return read();
}

async function script(page: Page, state: IScript): Promise<void> {
  await page.route(/\/themisto\/api\/predictors/, route =>
    route.fulfill(
      reply(
        readPredictorsInfo,
        predictorsInfo({
          predictors: state.predictors,
          contexts: ['none', 'full']
        })
      )
    )
  );
  await page.route(/\/themisto\/api\/trajectories\?/, route =>
    route.fulfill(
      reply(readTrajectoryPage, {
        trajectories: [
          {
            id: TRAJECTORY,
            kernel_id: 'k',
            notebook_path: null,
            started_at: '2026-11-29T10:00:00Z',
            ended_at: null,
            end_reason: null,
            restart_of: null,
            steps: state.steps.length,
            source: 'kernel',
            user: 'u'
          }
        ],
        total: 1,
        limit: 1,
        offset: 0
      })
    )
  );
  await page.route(/\/themisto\/api\/trajectories\/[^/]+\/steps/, route =>
    route.fulfill(
      reply(readStepsPage, {
        trajectory_id: TRAJECTORY,
        // whole steps, as the server keeps them
        steps: state.steps.map(s => ({
          format_version: 1,
          ...s,
          started_at: '2026-11-29T10:00:00Z',
          ended_at: '2026-11-29T10:00:01Z',
          outputs: [],
          hash_index: '0123456789abcdef'
        })),
        next_since_step: null
      })
    )
  );
  await page.route(/\/themisto\/api\/trajectories\/[^/]+\/history/, route =>
    route.fulfill(
      reply(readHistoryPage, {
        trajectory_id: TRAJECTORY,
        steps: state.steps.map(s => ({
          step: s.step,
          cell_id: s.cell_id,
          code_hash: '00000000',
          execution_time: s.execution_time,
          memory_bytes: s.memory_bytes,
          error: null,
          predictions: []
        })),
        next_since_step: null
      })
    )
  );
  await page.route(/\/themisto\/api\/trajectories\/[^/]+\/predictions/, route =>
    route.fulfill(reply(readPredictionsPage, { predictions: [] }))
  );
  await page.routeWebSocket(/\/api\/events\/subscribe/, ws => {
    state.bus = ws; // JupyterLab's EventManager, talking to the test
  });
  await page.route(
    /\/themisto\/api\/predictions(\?|$)/,
    (route, request: Request) => {
      state.requests.push(request.postDataJSON());
      return route.fulfill(
        reply(
          readPredictionsStarted,
          {
            accepted: true,
            trajectory_id: TRAJECTORY,
            target_step: state.steps.length + 1,
            predictions: 1
          },
          202
        )
      );
    }
  );
  await page.route(/\/themisto\/api\/predictions\/[^/?]+(\?|$)/, route => {
    const path = new URL(route.request().url()).pathname;
    const id = decodeURIComponent(path.split('/').pop() ?? '');
    state.fetched?.push(id);
    const whole = state.predictions?.[id];
    return route.fulfill(
      whole
        ? reply(readPrediction, whole)
        : {
            status: 404,
            contentType: 'application/json',
            body: JSON.stringify({ message: `Unknown prediction ${id}` })
          }
    );
  });
}

/** What every event is about; the kernel is the notebook's, once known. */
const envelope = {
  trajectory_id: TRAJECTORY,
  kernel_id: 'k',
  notebook_path: null as string | null
};

function step(n: number, cell: string, code: string, output: string) {
  return {
    trajectory_id: TRAJECTORY,
    kernel_id: 'k',
    notebook_path: null,
    step: n,
    cell_id: cell,
    code,
    output,
    execution_time: 0.0123,
    memory_bytes: 98312192,
    runtime_variables: {
      greeting: {
        type: 'str',
        size: 62,
        size_exact: true,
        repr: "'hello there'",
        length: 11
      },
      df: {
        type: 'DataFrame',
        size: 2400132,
        size_exact: false,
        shape: [100000, 3],
        repr: '        age  ...\n[100000 rows x 3 columns]'
      }
    },
    error: null
  };
}

function prediction(
  task: string,
  target: number,
  context: string,
  extra: Record<string, unknown> = {}
) {
  return {
    id: `${task}-${target}-${context}`,
    ...envelope,
    task,
    context,
    predictor: 'baseline',
    model: 'baseline',
    target_step: target,
    cell_id: null,
    created_at: '2026-11-29T10:00:00Z',
    latency: 0.004,
    prompt_tokens: 120,
    completion_tokens: 6,
    cached_tokens: null,
    prefix_reused: null,
    dropped_steps: 0,
    answer: '',
    error: null,
    reference: null,
    scores: null,
    ...extra
  };
}

// Tall enough for the whole panel in the screenshots.
test.use({ autoGoto: false, viewport: { width: 1280, height: 1800 } });

test.describe('Themisto prediction panel states', () => {
  test.afterEach(() => expectNoDrift());

  test('predicting, a provider error with Retry, then real output, diff, scores and next cell', async ({
    page
  }, testInfo) => {
    const state: IScript = {
      predictors: ['baseline'],
      steps: [],
      requests: [],
      predictions: {},
      fetched: []
    };
    await script(page, state);
    await page.goto();
    await page.notebook.createNew();
    await page.notebook.setCell(0, 'code', 'greeting = "hello there"');
    await page.notebook.addCell('code', 'print(greeting)');
    const [cell0, cell1] = [await cellId(page, 0), await cellId(page, 1)];
    const panel = await openPanel(page);
    const kernelId = await kernelOf(page);
    envelope.kernel_id = kernelId; // the page follows its notebook's kernel

    // Step 1 recorded; the output of cell 2 is being predicted.
    state.steps = [step(1, cell0, 'greeting = "hello there"', '')];
    await send(state, [
      { ...envelope, type: 'step', step: state.steps[0] },
      ...['none', 'full'].map(context => ({
        ...envelope,
        type: 'predicting',
        task: 'output',
        context,
        predictor: 'baseline',
        target_step: 2,
        cell_id: cell1
      }))
    ]);
    const outputs = panel.locator('.themisto-OutputSection .themisto-Card');
    await expect(outputs).toHaveCount(2);
    await expect(outputs.first()).toHaveAttribute('data-state', 'predicting');
    await expect(outputs.first()).toContainText('predicting…');

    // One context answers, the other fails at the provider.
    const answered = prediction('output', 2, 'none', {
      cell_id: cell1,
      answer: 'hello world\n'
    });
    const failed = prediction('output', 2, 'full', {
      cell_id: cell1,
      error: { type: 'ProviderError', message: 'rate limit exceeded (429)' }
    });
    await send(state, [
      { ...envelope, type: 'prediction', prediction: answered },
      { ...envelope, type: 'prediction', prediction: failed }
    ]);
    const none = panel.locator('.themisto-OutputSection [data-context="none"]');
    const full = panel.locator('.themisto-OutputSection [data-context="full"]');
    await expect(none).toHaveAttribute('data-state', 'done');
    await expect(none.locator('.themisto-Predicted')).toHaveText(
      'hello world\n'
    );
    await expect(none).toHaveAttribute('data-landed', 'false');
    await expect(full).toHaveAttribute('data-state', 'error');
    await expect(full).toContainText(
      'ProviderError: rate limit exceeded (429)'
    );
    await full.locator('.themisto-Retry').click();
    await expect.poll(() => state.requests.length).toBe(1);
    expect(state.requests[0]).toEqual({
      kernel_id: kernelId,
      task: 'output',
      code: 'print(greeting)'
    });

    // The retry answers; the cell ran: real output, diff, scores (the
    // scored events carry only them); the next cell is predicted.
    const retried = prediction('output', 2, 'full', {
      id: 'output-2-full-retry',
      cell_id: cell1,
      answer: 'hello there\n'
    });
    state.steps = [
      ...state.steps,
      step(2, cell1, 'print(greeting)', 'hello there\n')
    ];
    const scores = { exact_match: 0, rouge_l: 0.5, chrf: 0.62 };
    const scored = (id: string, value: Record<string, number>) => ({
      ...envelope,
      type: 'scored',
      prediction_id: id,
      task: 'output',
      target_step: 2,
      reference: 'hello there\n',
      scores: value
    });
    await send(state, [
      { ...envelope, type: 'prediction', prediction: retried },
      { ...envelope, type: 'step', step: state.steps[1] },
      scored(answered.id, scores),
      scored(retried.id, { exact_match: 1, rouge_l: 1, chrf: 1 }),
      ...['none', 'full'].map(context => ({
        ...envelope,
        type: 'prediction',
        prediction: prediction('next-cell', 3, context, {
          answer: 'print(greeting.upper())'
        })
      }))
    ]);
    await expect(none).toHaveAttribute('data-landed', 'true');
    await expect(none.locator('.themisto-Actual')).toHaveText('hello there\n');
    await expect(none.locator('.themisto-Predicted del').first()).toHaveText(
      'wo'
    );
    await expect(none.locator('.themisto-Actual ins').first()).toHaveText(
      'the'
    );
    await expect(none.locator('.themisto-Scores')).toContainText(
      'ROUGE-L 0.50'
    );
    await expect(full.locator('.themisto-Scores')).toContainText('EM 1.00');
    await expect(
      panel.locator('.themisto-Scoreboard tr[data-task="output"]')
    ).toHaveCount(2);
    await expect(
      panel.locator('.themisto-Plot polyline, .themisto-Plot circle')
    ).toHaveCount(2);
    await expect(
      panel.locator('.themisto-VariablesTable tr[data-name="df"]')
    ).toContainText('DataFrame 100000×3');
    await expect(panel.locator('.themisto-Runtime-summary')).toContainText(
      '93.8 MiB'
    );

    // Cell 2 carries a badge with its output score; cell 1, predicted by
    // no one, says so.
    const markers = page.locator('.jp-Cell .themisto-CellMarker');
    await expect(markers).toHaveCount(2);
    await expect(markers.first()).toHaveAttribute('data-state', 'none');
    const marker = markers.last();
    await expect(marker).toHaveAttribute('data-themisto-step', '2');
    await expect(marker).toHaveText('RL 0.50');
    await expect(marker).toHaveAttribute(
      'title',
      /baseline · full \(step 2\): EM 1\.00/
    );

    // Prompts are not on the stream: one is read when its card shows it.
    expect(state.fetched).toEqual([]);
    state.predictions![answered.id] = {
      ...answered,
      prompt: { system: 'You predict cell outputs.', user: 'print(greeting)' },
      raw: 'hello world\n'
    };
    await none.locator('.themisto-Prompt summary').click();
    await expect(none.locator('.themisto-PromptSystem')).toHaveText(
      'You predict cell outputs.'
    );
    await expect(none.locator('.themisto-PromptUser')).toHaveText(
      'print(greeting)'
    );
    expect(state.fetched).toEqual([answered.id]);
    await none.locator('.themisto-Prompt summary').click();

    await screenshotThemes(page, panel, testInfo, 'panel-states');

    // Replace the active cell with the predicted next cell, then insert it
    // below the last cell run (last: the next cell is then written, and the
    // panel says so instead of predicting it).
    await page.notebook.selectCells(1);
    const next = panel.locator('.themisto-NextSection [data-context="none"]');
    await next.locator('.themisto-Replace').click();
    await expect
      .poll(() => cellSource(page, 1))
      .toBe('print(greeting.upper())');
    await next.locator('.themisto-Insert').click();
    await expect
      .poll(() => cellSource(page, 2))
      .toBe('print(greeting.upper())');
    await expect(panel.locator('.themisto-NextSection')).toHaveAttribute(
      'data-frontier',
      'false'
    );

    // Predict next cell now: the header button posts a request.
    await panel.locator('.themisto-PredictNow').click();
    await expect.poll(() => state.requests.length).toBe(2);
    expect(state.requests[1]).toEqual({
      kernel_id: kernelId,
      task: 'next-cell'
    });
  });

  test('says when no predictor is configured', async ({ page }, testInfo) => {
    const state: IScript = { predictors: [], steps: [], requests: [] };
    await script(page, state);
    await page.goto();
    await page.notebook.createNew();
    const panel = await openPanel(page);
    const banner = panel.locator('.themisto-Banner[data-kind="no-predictor"]');
    await expect(banner).toContainText('No predictor is configured');
    await screenshotThemes(page, panel, testInfo, 'panel-no-predictor');
  });
});
