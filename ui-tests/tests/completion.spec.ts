import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';

import { cellSource } from './helpers';
import {
  checked,
  expectNoDrift,
  readCellCompletion,
  readCompletionLine,
  readPredictorsInfo,
  reply
} from './scripted';

const LIVE = { timeout: 30000 };

/**
 * The server's completer as scripted here: `GET predictors` names
 * `completer`, and `POST completions` answers what `answer` gives for the
 * text before and after the cursor (null: none), streamed when asked so.
 * Returns the (before, after, streamed) triples asked, in order. The server
 * side is tested with real models in tests/test_code_completion.py and
 * tests/test_live_hybrid_model.py.
 */
async function scriptCompleter(
  page: IJupyterLabPageFixture,
  completer: string,
  answer: (before: string, after: string) => string | null
): Promise<[string, string, boolean][]> {
  const asked: [string, string, boolean][] = [];
  await page.route(/\/themisto\/api\/predictors/, async route => {
    const real = await (await route.fetch()).json();
    await route.fulfill(reply(readPredictorsInfo, { ...real, completer }));
  });
  await page.route(/\/themisto\/api\/completions/, async route => {
    const body = route.request().postDataJSON();
    asked.push([body.beginning, body.after, body.stream === true]);
    const completion = answer(body.beginning, body.after);
    const answered = {
      completion,
      predictor: completer,
      reason: completion === null ? 'scripted' : null,
      trajectory_id: 't',
      after_step: 1
    };
    if (!body.stream) {
      await route.fulfill(reply(readCellCompletion, answered));
      return;
    }
    // streamed as the server does: the text so far as it grows, then the answer
    const lines = [];
    for (let end = 1; completion && end < completion.length; end += 2) {
      lines.push({ completion: completion.slice(0, end), done: false });
    }
    lines.push({ ...answered, done: true });
    await route.fulfill({
      contentType: 'application/x-ndjson',
      body: lines
        .map(line => JSON.stringify(checked(readCompletionLine, line)) + '\n')
        .join('')
    });
  });
  return asked;
}

/**
 * A new notebook whose first cell `x = 21` has run and been recorded.
 */
async function afterOneCell(
  page: IJupyterLabPageFixture,
  name: string
): Promise<void> {
  await page.reload();
  await page.notebook.createNew(name);
  await page.notebook.setCell(0, 'code', 'x = 21');
  await page.notebook.runCell(0, { inplace: true });
  await expect(page.locator('.jp-Cell .themisto-CellMarker')).toHaveCount(
    1,
    LIVE
  );
}

test.describe('Inline completion of a cell being typed', () => {
  test.afterEach(() => expectNoDrift());

  test('asks the server completer once typing leaves the prediction, and offers its rest', async ({
    page
  }) => {
    // This server runs the baseline, which writes no cells: the completer's
    // answers are scripted.
    const asked = await scriptCompleter(page, 'hybrid:openai:m', before =>
      before === 'print(x' ? ' * 2)' : null
    );
    await afterOneCell(page, 'completion.ipynb');
    await page.notebook.addCell('code', '');
    await page.notebook.enterCellEditingMode(1);
    asked.length = 0; // (setting cell 0's text above asked for it too)
    await page.keyboard.type('print(x', { delay: 50 });
    await expect(page.locator('.jp-GhostText')).toHaveText(' * 2)', LIVE);
    // Keystrokes closer than the pause asked nothing: only the text typed.
    expect(asked.map(([before]) => before)).toEqual(['print(x']);
    await page.keyboard.press('Tab');
    await expect.poll(() => cellSource(page, 1)).toBe('print(x * 2)');
  });

  test('completes in any code cell, from the text before and after the cursor', async ({
    page
  }) => {
    const asked = await scriptCompleter(page, 'hybrid', (before, after) =>
      before === 'y = x' && after === '\nprint(y)' ? ' + 1' : null
    );
    await afterOneCell(page, 'anywhere.ipynb');
    // a new cell above the one run: not where the next cell goes
    await page.notebook.selectCells(0);
    await page.keyboard.press('Escape');
    await page.keyboard.press('a');
    await page.notebook.enterCellEditingMode(0);
    await page.keyboard.type('\nprint(y)', { delay: 50 });
    await page.keyboard.press('ArrowUp');
    await page.keyboard.type('y = x', { delay: 50 });
    await expect(page.locator('.jp-GhostText')).toHaveText(' + 1', LIVE);
    expect(asked).toContainEqual(['y = x', '\nprint(y)', true]); // streamed
    await page.keyboard.press('Tab');
    await expect
      .poll(() => cellSource(page, 0))
      .toBe('y = x + 1\nprint(y)');
  });
});
