import { expect, test } from '@jupyterlab/galata';

import { cellSource, openPanel, screenshotThemes } from './helpers';

/*
 * Against the real server, which runs the deterministic `baseline`
 * predictor with the `none` and `full` contexts
 * (jupyter_server_test_config.py).
 */

const STATUS_ITEM = '.themisto-StatusItem';
// The server predicts and scores asynchronously.
const LIVE = { timeout: 30000 };

// Tall enough for the whole panel in the screenshots.
test.use({ viewport: { width: 1280, height: 1800 } });

test.describe('Themisto prediction panel', () => {
  test('says the next cell is written already where it is, and predicts one at the frontier', async ({
    page
  }) => {
    await page.notebook.createNew();
    const panel = await openPanel(page);
    await page.notebook.setCell(0, 'code', 'a = 1');
    await page.notebook.addCell('code', 'b = a + 1');
    await page.notebook.runCell(0, { inplace: true });
    await expect(page.locator(STATUS_ITEM)).toHaveAttribute(
      'data-steps',
      '1',
      LIVE
    );
    // The cell below is written: nothing to guess.
    const next = panel.locator('.themisto-NextSection');
    await expect(next).toHaveAttribute('data-frontier', 'false', LIVE);
    await expect(next.locator('.themisto-Written')).toContainText(
      'written already'
    );
    await expect(next.locator('.themisto-Card')).toHaveCount(0);
    // Emptied (blank), it is the frontier: the predictions of the next cell
    // show. (Galata types the source over a selection: typing nothing would
    // leave it.)
    await page.notebook.setCell(1, 'code', ' ');
    await expect(next.locator('.themisto-Card')).toHaveCount(2, LIVE);
    await expect(next).not.toHaveAttribute('data-frontier', 'false');
  });

  test('shows the predicted output, then the real one with scores, and inserts the next cell', async ({
    page
  }, testInfo) => {
    await page.notebook.createNew();
    const panel = await openPanel(page);

    // The baseline predicts outputs from the runtime snapshot of the step
    // before (under `full`: under `none` it sees no state), and the next cell
    // from the cells run so far.
    await page.notebook.setCell(0, 'code', 'x = 21');
    await page.notebook.addCell('code', 'print(x)');
    await page.notebook.runCell(0, { inplace: true });
    await page.notebook.runCell(1, { inplace: true });

    // The output prediction of step 2, one card per context.
    const outputs = panel.locator('.themisto-OutputSection .themisto-Card');
    await expect(outputs).toHaveCount(2, LIVE);
    const output = panel.locator(
      '.themisto-OutputSection .themisto-Card[data-context="full"]'
    );
    await expect(output).toHaveAttribute('data-target-step', '2', LIVE);
    await expect(output).toHaveAttribute('data-state', 'done', LIVE);
    await expect(output.locator('.themisto-Predicted')).toContainText('21');

    // Once the cell ran: the real output beside it, and the scores.
    await expect(output).toHaveAttribute('data-landed', 'true', LIVE);
    await expect(output.locator('.themisto-Actual')).toHaveText(/^21\n?$/);
    const scores = output.locator('.themisto-Scores');
    await expect(scores).toHaveAttribute(
      'data-rouge-l',
      /^[01](\.\d+)?$/,
      LIVE
    );
    await expect(scores).toContainText('ROUGE-L');
    await expect(
      panel.locator('.themisto-Scoreboard tr[data-task="output"]')
    ).toHaveCount(2);

    // Prompts are not on the stream: Show prompt reads this one's from the
    // server (GET predictions/{id}).
    const prompt = output.locator('.themisto-Prompt');
    await prompt.locator('summary').click();
    await expect(prompt.locator('.themisto-PromptUser')).toContainText(
      'print(x)',
      LIVE
    );
    await expect(prompt.locator('.themisto-PromptSystem')).not.toBeEmpty();
    await prompt.locator('summary').click();

    // The cell carries its score badge.
    const marker = page.locator('.jp-Cell .themisto-CellMarker').last();
    await expect(marker).toHaveText(/^RL \d\.\d\d$/, LIVE);
    await expect(marker).toHaveAttribute('title', /ROUGE-L/);

    // The next-cell prediction, inserted below: the new cell is the prediction.
    const next = panel.locator(
      '.themisto-NextSection .themisto-Card[data-context="none"]'
    );
    await expect(next).toHaveAttribute('data-target-step', '3', LIVE);
    await expect(next).toHaveAttribute('data-state', 'done', LIVE);
    const predicted =
      (await next.locator('.themisto-NextCode').textContent()) ?? '';
    expect(predicted).toBe('print(x)');
    await next.locator('.themisto-Insert').click();
    await expect.poll(() => cellSource(page, 2)).toBe(predicted);

    await screenshotThemes(page, panel, testInfo, 'panel');

    // Run it: the status bar and the panel count three steps.
    await page.notebook.runCell(2, { inplace: true });
    await expect(page.locator(STATUS_ITEM)).toHaveAttribute(
      'data-steps',
      '3',
      LIVE
    );
    await expect(panel.locator('.themisto-Header-steps')).toHaveAttribute(
      'data-steps',
      '3',
      LIVE
    );
    // The next-cell prediction of step 3 was scored: the scoreboard has it.
    await expect(
      panel.locator('.themisto-Scoreboard tr[data-task="next-cell"]')
    ).toHaveCount(2, LIVE);
    // The runtime table shows the variables after the last cell.
    await expect(
      panel.locator('.themisto-VariablesTable tr[data-name="x"]')
    ).toContainText('int');

    // The next-cell prediction of step 4 is the cell just run (the baseline
    // repeats the successor of the most similar earlier cell): the empty cell
    // below offers no ghost text for it.
    await expect(next).toHaveAttribute('data-target-step', '4', LIVE);
    await expect(next).toHaveAttribute('data-state', 'done', LIVE);
    expect(await next.locator('.themisto-NextCode').textContent()).toBe(
      'print(x)'
    );
    await page.notebook.addCell('code', '');
    await page.notebook.enterCellEditingMode(3);
    await page.waitForTimeout(3000);
    await expect(page.locator('.jp-GhostText')).toHaveCount(0);

    // A new cell run: now the prediction is another cell's code, and the
    // empty cell below offers it as ghost text; Tab takes it.
    await page.keyboard.press('Escape');
    await page.notebook.setCell(3, 'code', 'x = 22');
    await page.notebook.runCell(3, { inplace: true });
    await expect(next).toHaveAttribute('data-target-step', '5', LIVE);
    await expect(next).toHaveAttribute('data-state', 'done', LIVE);
    const latest =
      (await next.locator('.themisto-NextCode').textContent()) ?? '';
    expect(latest).not.toBe('');
    expect(latest).not.toBe('x = 22');
    await page.notebook.addCell('code', '');
    await page.notebook.enterCellEditingMode(4);
    await expect(page.locator('.jp-GhostText')).toHaveText(latest, LIVE);
    await page.keyboard.press('Tab');
    await expect.poll(() => cellSource(page, 4)).toBe(latest);
  });
});
