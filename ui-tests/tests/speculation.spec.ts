import {
  expect,
  IJupyterLabPageFixture,
  test
} from '@jupyterlab/galata';
import { Locator } from '@playwright/test';

import { openPanel } from './helpers';

/*
 * Against the real server (baseline predictor, contexts none and full;
 * jupyter_server_test_config.py): a cell typed and left for a moment is
 * predicted from its text before it runs, and that prediction is in the
 * panel when it runs, before its real output.
 */

const LIVE = { timeout: 30000 };
// The cell sleeps 3 s: the prediction must be there well before its output.
const AT_ONCE = { timeout: 2000 };

/**
 * A new notebook whose first cell, `x = 1`, has run and been scored; the
 * panel open.
 */
async function afterFirstCell(
  page: IJupyterLabPageFixture
): Promise<Locator> {
  await page.notebook.createNew();
  const panel = await openPanel(page);
  await page.notebook.setCell(0, 'code', 'x = 1');
  await page.notebook.runCell(0, { inplace: true });
  const cards = panel.locator('.themisto-OutputSection .themisto-Card');
  await expect(cards.first()).toHaveAttribute('data-landed', 'true', LIVE);
  return panel;
}

test.describe('Themisto speculation', () => {
  test('a cell typed, left for a moment and run has its prediction before its output', async ({
    page
  }) => {
    const panel = await afterFirstCell(page);

    // Type the cell, then pause for longer than speculationPause (1.5 s).
    await page.notebook.addCell('code', 'import time; time.sleep(3); 1+1');
    await page.waitForTimeout(2500);

    // Run it without waiting for it to finish.
    await page.notebook.selectCells(1);
    await page.keyboard.press('Control+Enter');
    const card = panel.locator(
      '.themisto-OutputSection .themisto-Card[data-context="full"]'
    );
    await expect(card).toHaveAttribute('data-target-step', '2', AT_ONCE);
    await expect(card).toHaveAttribute('data-speculative', 'true', AT_ONCE);
    await expect(card).toHaveAttribute('data-state', 'done');
    // Its real output has not come yet.
    await expect(card).toHaveAttribute('data-landed', 'false');
    const output = page.locator('.jp-Notebook .jp-Cell').nth(1);
    await expect(output.locator('.jp-OutputArea-output')).toHaveCount(0);
    await expect(card.locator('.themisto-Card-meta')).toContainText(
      'before the run'
    );

    // Then the cell finishes and the prediction is scored against it.
    await expect(card).toHaveAttribute('data-landed', 'true', LIVE);
    await expect(output.locator('.jp-OutputArea-output')).toContainText('2');
  });

  test('the selected cell shows its predicted output before Shift+Enter', async ({
    page
  }) => {
    const panel = await afterFirstCell(page);
    const section = panel.locator('.themisto-OutputSection');
    // Typed and left: predicted from its text, shown before it runs.
    await page.notebook.addCell('code', 'x + 41');
    await page.notebook.selectCells(1);
    await expect(section).toHaveAttribute('data-before-run', 'true', LIVE);
    await expect(section.locator('.themisto-Section-title')).toHaveText(
      'If you run this cell'
    );
    const card = section.locator('.themisto-Card[data-context="full"]');
    await expect(card.locator('.themisto-Predicted')).toHaveText('42');
    await expect(card).toHaveAttribute('data-before-run', 'true');
    // Another cell selected: not that cell's prediction any more.
    await page.notebook.selectCells(0);
    await expect(section).not.toHaveAttribute('data-before-run', 'true');
    // Run with that text: it becomes the cell's own prediction, scored.
    await page.notebook.selectCells(1);
    await expect(section).toHaveAttribute('data-before-run', 'true', LIVE);
    await page.keyboard.press('Control+Enter');
    await expect(section).not.toHaveAttribute('data-before-run', 'true', LIVE);
    const own = section.locator('.themisto-Card[data-context="full"]');
    await expect(own).toHaveAttribute('data-speculative', 'true', LIVE);
    await expect(own).toHaveAttribute('data-landed', 'true', LIVE);
    await expect(own.locator('.themisto-Scores')).toHaveAttribute(
      'data-exact-match',
      '1'
    );
  });
});
