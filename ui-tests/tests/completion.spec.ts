import { expect, test } from '@jupyterlab/galata';

import { cellSource } from './helpers';

const LIVE = { timeout: 30000 };

test.describe('Inline completion of a cell being typed', () => {
  test('asks the server completer once typing leaves the prediction, and offers its rest', async ({
    page
  }) => {
    // This server runs the baseline, which writes no cells: the completer's
    // answers are scripted here (the server side is tested with a real model
    // server in tests/test_live_hybrid_model.py).
    const asked: string[] = [];
    await page.route(/\/themisto\/api\/predictors/, async route => {
      const real = await (await route.fetch()).json();
      await route.fulfill({
        json: { ...real, completer: 'hybrid:openai:m' }
      });
    });
    await page.route(/\/themisto\/api\/completions/, async route => {
      const body = route.request().postDataJSON();
      asked.push(body.beginning);
      await route.fulfill({
        json: {
          completion: body.beginning === 'print(x' ? ' * 2)' : null,
          predictor: 'hybrid:openai:m',
          reason: null,
          trajectory_id: 't',
          after_step: 1
        }
      });
    });
    await page.reload();
    await page.notebook.createNew('completion.ipynb');
    await page.notebook.setCell(0, 'code', 'x = 21');
    await page.notebook.runCell(0, { inplace: true });
    await expect(page.locator('.jp-Cell .themisto-CellMarker')).toHaveCount(
      1,
      LIVE
    );
    await page.notebook.addCell('code', '');
    await page.notebook.enterCellEditingMode(1);
    asked.length = 0; // (setting cell 0's text above asked for it too)
    await page.keyboard.type('print(x', { delay: 50 });
    await expect(page.locator('.jp-GhostText')).toHaveText(' * 2)', LIVE);
    // Keystrokes closer than the pause asked nothing: only the text typed.
    expect(asked).toEqual(['print(x']);
    await page.keyboard.press('Tab');
    await expect.poll(() => cellSource(page, 1)).toBe('print(x * 2)');
  });

  test('completes in any code cell, from the text before and after the cursor', async ({
    page
  }) => {
    const asked: [string, string][] = [];
    await page.route(/\/themisto\/api\/predictors/, async route => {
      const real = await (await route.fetch()).json();
      await route.fulfill({ json: { ...real, completer: 'hybrid' } });
    });
    await page.route(/\/themisto\/api\/completions/, async route => {
      const body = route.request().postDataJSON();
      asked.push([body.beginning, body.after]);
      const fits = body.beginning === 'y = x' && body.after === '\nprint(y)';
      await route.fulfill({
        json: {
          completion: fits ? ' + 1' : null,
          predictor: 'hybrid',
          reason: fits ? null : 'scripted',
          trajectory_id: 't',
          after_step: 1
        }
      });
    });
    await page.reload();
    await page.notebook.createNew('anywhere.ipynb');
    await page.notebook.setCell(0, 'code', 'x = 21');
    await page.notebook.runCell(0, { inplace: true });
    await expect(page.locator('.jp-Cell .themisto-CellMarker')).toHaveCount(
      1,
      LIVE
    );
    // a new cell above the one run: not where the next cell goes
    await page.notebook.selectCells(0);
    await page.keyboard.press('Escape');
    await page.keyboard.press('a');
    await page.notebook.enterCellEditingMode(0);
    await page.keyboard.type('\nprint(y)', { delay: 50 });
    await page.keyboard.press('ArrowUp');
    await page.keyboard.type('y = x', { delay: 50 });
    await expect(page.locator('.jp-GhostText')).toHaveText(' + 1', LIVE);
    expect(asked).toContainEqual(['y = x', '\nprint(y)']);
    await page.keyboard.press('Tab');
    await expect
      .poll(() => cellSource(page, 0))
      .toBe('y = x + 1\nprint(y)');
  });
});
